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

With `--seen FILE…` (`sleuth eval --split train --folds K --fold I --policy RUN/final
--trajectories FILE`: the same weights on the questions they trained on), the last table has a
column for those too: a scope learnt as a list of the training entities' names is copied on
the questions it was taught on and not on new ones.
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


def read_records(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def queries_of(records: list[dict], policy: str) -> dict[str, list[str]]:
    return {
        r["question_id"]: [s["query"] for s in r.get("searches") or []]
        for r in records
        if r["policy"] == policy
    }


def agent_queries(folder: str) -> dict[str, list[str]]:
    """The trained agent's searches of each question, as its final evaluation recorded them."""
    path = Path(folder) / EVAL_TRAJECTORIES
    path = path if path.exists() else path.with_name(f"{EVAL_TRAJECTORIES}.gz")
    return queries_of(read_records(path), "trained")


def seen_queries(path: str) -> dict[str, list[str]]:
    """The searches of the one checkpoint a `sleuth eval --trajectories` file holds (its
    echo and base rows left out)."""
    records = read_records(Path(path))
    policies = {r["policy"] for r in records} - {"base"}
    policies = {p for p in policies if p != "echo" and not p.startswith("echo@")}
    if len(policies) != 1:
        raise SystemExit(
            f"{path}: one checkpoint's trajectories expected, found {sorted(policies)}"
        )
    return queries_of(records, policies.pop())


def second_search(teacher, question, written: list[str]) -> tuple[str, str]:
    """Whether the teacher scopes its second search of `question`, and what the agent's
    second search (`written`: its queries) did against it."""
    scope = split_scope(teacher.scope(question))[0].lower()
    second = split_scope(written[1])[0].lower() if len(written) > 1 else None
    if second is None:
        kind = "no second search"
    elif scope and second == scope:
        kind = "the teacher's scope"
    elif not second:
        kind = "no scope"
    else:
        kind = "another scope"
    return ("scoped" if scope else "unscoped"), kind


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--index", required=True)
    p.add_argument("--questions", required=True)
    p.add_argument("--runs", nargs="+", required=True, help="run folders, one setting")
    p.add_argument(
        "--seen",
        nargs="+",
        default=[],
        metavar="FILE",
        help="`sleuth eval --trajectories` files of the runs' weights on their training questions",
    )
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
            scoped, kind = second_search(teacher, by_id[qid], queries.get(qid, []))
            every[(scoped, kind)] += 1
            if recall != taught.recall.get(qid):
                better = "teacher" if taught.recall[qid] > recall else "agent"
                counts[(better, scoped, kind)] += 1
    print("| finds more | the teacher's second search | the agent's second search | questions |")
    print("|---|---|---|---|")
    for (better, scoped, kind), n in sorted(counts.items()):
        print(f"| {better} | {scoped} | {kind} | {n} |")
    seen: Counter = Counter()  # the same, on the questions the weights trained on
    for path in args.seen:
        for qid, written in seen_queries(path).items():
            seen[second_search(teacher, by_id[qid], written)] += 1
    if not args.seen:
        print("\n| every question: the teacher's second search | the agent's | questions |")
        print("|---|---|---|")
        for (scoped, kind), n in sorted(every.items()):
            print(f"| {scoped} | {kind} | {n} |")
        return 0
    print("\n| the teacher's second search | the agent's | held out | trained on |")
    print("|---|---|---|---|")
    for scoped, kind in sorted(every.keys() | seen.keys()):
        print(f"| {scoped} | {kind} | {every[scoped, kind]} | {seen[scoped, kind]} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
