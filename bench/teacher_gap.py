"""Where a trained agent's evidence falls short of its scripted teacher's, question by question.

    python bench/teacher_gap.py --index var/pyref-index \
        --questions datasets/python-reference/questions.jsonl --runs var/run-f0-s0 var/run-f1-s0

`sleuth compare` pairs the agent's recall with the teacher's searches (no model) at the same
chunk count; this says which questions make the difference and what the agent's second search
was there. Each run's held-out questions are read from its recorded trajectories (no model
runs); the teacher's searches are `sleuth compare`'s row for the run's settings
(`pooled.teacher_searches`). For every question one of the two finds golden evidence the other
does not, the agent's second search is sorted against the teacher's: the teacher's scope
copied, no scope (`[]`: the question again everywhere), another scope, or no second search;
then the same for every question.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.compare import settings_as_read  # noqa: E402
from engine.evaluation.pooled import (  # noqa: E402
    EVAL_TRAJECTORIES,
    agent_chunk_count,
    check_one_setting,
    held_out,
    no_model_teacher,
    read_run,
    score_attempts,
    teacher_searches,
)
from engine.search.index import SearchIndex, split_scope  # noqa: E402


def agent_queries(folder: str) -> dict[str, list[str]]:
    """The trained agent's searches of each question, as its final evaluation recorded them."""
    path = Path(folder) / EVAL_TRAJECTORIES
    path = path if path.exists() else path.with_name(f"{EVAL_TRAJECTORIES}.gz")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    return {
        r["question_id"]: [s["query"] for s in r.get("searches") or []]
        for r in records
        if r["policy"] == "trained"
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--runs", nargs="+", required=True, help="run folders, one setting")
    args = p.parse_args(argv)

    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    by_id = {q.id: q for q in questions}
    runs = [read_run(folder) for folder in args.runs]
    check_one_setting(runs)
    held = [
        [q for q in held_out(run, questions) if q.id in run.attempts["trained"]] for run in runs
    ]
    asked = list({q.id: q for mine in held for q in mine}.values())
    # The teacher's row as `sleuth compare` makes it: once, over every run's held-out
    # questions, at the pooled agent's chunk count.
    pooled = score_attempts("trained", [run.attempts["trained"] for run in runs], asked, None)
    teacher = no_model_teacher(index, asked, settings_as_read(runs[0].config))
    taught = teacher_searches(index, asked, teacher, agent_chunk_count(pooled))
    counts: Counter = Counter()  # where one finds more than the other
    every: Counter = Counter()
    for folder, run, mine in zip(args.runs, runs, held, strict=True):
        agent = score_attempts("trained", [run.attempts["trained"]], mine, None)
        queries = agent_queries(folder)
        for qid, recall in agent.recall.items():
            scope = split_scope(teacher.scope(by_id[qid]))[0].lower()
            written = queries.get(qid, [])
            second = split_scope(written[1])[0].lower() if len(written) > 1 else None
            if second is None:
                kind = "no second search"
            elif scope and second == scope:
                kind = "the teacher's scope"
            elif not second:
                kind = "no scope"
            else:
                kind = "another scope"
            scoped = "scoped" if scope else "unscoped"
            every[(scoped, kind)] += 1
            if recall != taught.recall.get(qid):
                better = "teacher" if taught.recall[qid] > recall else "agent"
                counts[(better, scoped, kind)] += 1
    print("| finds more | the teacher's second search | the agent's second search | questions |")
    print("|---|---|---|---|")
    for (better, scoped, kind), n in sorted(counts.items()):
        print(f"| {better} | {scoped} | {kind} | {n} |")
    print("\n| every question: the teacher's second search | the agent's | questions |")
    print("|---|---|---|")
    for (scoped, kind), n in sorted(every.items()):
        print(f"| {scoped} | {kind} | {n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
