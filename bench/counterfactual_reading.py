"""Whether an agent reads its answer out of its results or brings it along: held-out questions
asked against results whose answer words are swapped.

    python bench/counterfactual_reading.py --index var/pyref-index \
        --questions datasets/python-reference/questions.jsonl \
        --a var/old-f0-s0 var/old-f1-s0 [--a-cold-start] --b var/new-f0-s0 var/new-f1-s0

Accuracy mixes two sources of a right answer: what the results say, and what the model knew
before (pretraining, or the answers it learnt by heart). This tells them apart. Each run asks
the questions it held out that have a sound swap (`engine.training.counterfactual`: a figure or
a rare term of a short truth, swapped for a stand-in of its shape in every result the tool
shows and in the truth), greedily, under its own rules. An answer the judge credits against the
swapped truth was read from the results; one credited against the real truth was brought along
despite them. The swaps are drawn once per question (seeded by its id), so both sides answer the
same counterfactuals; B − A is paired over the questions both asked, with 95 % intervals. A
side's runs of several seeds are pooled: a question counts once, with the mean over its seeds.
`--a-cold-start` (`--b-cold-start`) asks a side's kept cold starts instead of its final agents.
A run's answers are kept beside its trajectories (`counterfactual_reading.jsonl`) and read from
there when asked the same swaps again: a record without weights still answers.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.baselines import COLD_START  # noqa: E402
from engine.evaluation.compare import _attempts, run_limits  # noqa: E402
from engine.evaluation.pooled import held_out, read_run  # noqa: E402
from engine.evaluation.stats import bootstrap_mean, paired_difference  # noqa: E402
from engine.rewards.judge import OfflineJudge  # noqa: E402
from engine.search.index import SearchIndex  # noqa: E402
from engine.training.counterfactual import (  # noqa: E402
    Counterfactuals,
    SwappedResults,
    counterfactual,
)


def swaps(questions, index, seed: int) -> dict[str, list[tuple[str, str]]]:
    """Each question's swap (question id → pairs), the same for every run that asks it; a text
    two questions share is left out (the tool tells questions apart by their text)."""
    cf = Counterfactuals(questions, index)
    texts = [q.question for q in questions]
    found = {}
    for question in questions:
        if texts.count(question.question) > 1:
            continue
        pairs = cf.pairs(question, random.Random(f"{seed}/{question.id}"))
        if pairs:
            found[question.id] = pairs
    return found


def side(folders, questions, index, pairs, *, cold_start: bool, args) -> dict[str, tuple]:
    """Question id → (read, brought along, right as asked), over every run's held-out
    questions that have a swap: 1.0 or 0.0 from one run, the mean over the runs (seeds) that
    asked it. The last from the run's recorded final evaluation, the question asked against its
    real results (NaN where the run recorded none)."""
    judge = OfflineJudge()
    scores: dict[str, list[tuple]] = {}
    for folder in folders:
        run = read_run(folder)
        asked = [q for q in held_out(run, questions) if q.id in pairs]
        posed = [counterfactual(q, pairs[q.id]) for q in asked]
        answers = swapped_answers(run, asked, pairs, cold_start=cold_start)
        if answers is None:
            weights = run.cold_start if cold_start else run.checkpoint
            if weights is None:
                raise SystemExit(
                    f"{folder}: no {'cold start' if cold_start else 'final'} weights, and no "
                    f"{ANSWERS} of these swaps"
                )
            tool = SwappedResults(index, {q.question: pairs[q.id] for q in asked})
            attempts = _attempts(
                f"{run.name} (swapped)",
                str(weights),
                posed,
                index=tool,
                limits=run_limits(run.config),
                args=args,
            )
            answers = {q.id: attempts[q.id].answer or "" for q in asked}
            keep_answers(run, answers, pairs, cold_start=cold_start)
        recorded = run.attempts.get(COLD_START if cold_start and run.config["steps"] else "trained")
        for real, swapped in zip(asked, posed, strict=True):
            as_asked = recorded.get(real.id) if recorded else None
            scores.setdefault(real.id, []).append(
                (
                    *credited(judge, real, swapped, answers[real.id]),
                    float(judge.judge(real.question, real.answer, as_asked.answer or "").correct)
                    if as_asked
                    else float("nan"),
                )
            )
    return pool_runs(scores)


# Beside a run's eval_trajectories.jsonl: its answers against swapped results, so that a record
# whose weights are gone still answers the bench (judged again by today's judge, as
# `sleuth compare` judges recorded answers) and its seed can be pooled with later ones.
ANSWERS = "counterfactual_reading.jsonl"


def swapped_answers(run, asked, pairs, *, cold_start: bool) -> dict[str, str] | None:
    """The run's kept answers to these questions under these very swaps, or None. Kept by a
    run that has since trained further (resumed with more steps), they are another agent's."""
    path = run.folder / ANSWERS
    if not path.exists():
        return None
    kept = {}
    for line in path.read_text().splitlines():
        row = json.loads(line)
        if row["cold_start"] == cold_start and row["steps"] == run.config.get("steps"):
            kept[row["question_id"]] = row
    if all(
        q.id in kept and [tuple(pair) for pair in kept[q.id]["swap"]] == list(pairs[q.id])
        for q in asked
    ):
        return {q.id: kept[q.id]["answer"] for q in asked}
    return None


def keep_answers(run, answers: dict[str, str], pairs, *, cold_start: bool) -> None:
    """Write the answers beside the run's trajectories (those of the other weights kept)."""
    path = run.folder / ANSWERS
    rows = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    rows = [row for row in rows if row["cold_start"] != cold_start]
    rows += [
        {
            "question_id": qid,
            "cold_start": cold_start,
            "steps": run.config.get("steps"),
            "swap": pairs[qid],
            "answer": answer,
        }
        for qid, answer in answers.items()
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def pool_runs(scores: dict[str, list[tuple]]) -> dict[str, tuple]:
    """Each question's columns averaged over the runs that asked it (its seeds), as
    `sleuth compare` pools seeds: a question counts once however many seeds asked it."""
    return {
        qid: tuple(map(statistics.fmean, zip(*runs, strict=True))) for qid, runs in scores.items()
    }


def credited(judge, real, swapped, answer: str) -> tuple[float, float]:
    """(read, brought along): whether `answer` is right against the swapped truth, and
    against the real one."""
    return (
        float(judge.judge(real.question, swapped.answer, answer).correct),
        float(judge.judge(real.question, real.answer, answer).correct),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--index", required=True)
    parser.add_argument("--a", nargs="+", required=True, help="run folders of setting A")
    parser.add_argument("--b", nargs="+", required=True, help="run folders of setting B")
    parser.add_argument("--a-cold-start", action="store_true", help="A's kept cold starts")
    parser.add_argument("--b-cold-start", action="store_true", help="B's kept cold starts")
    parser.add_argument("--seed", type=int, default=0, help="the draw of the stand-ins")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args(argv)

    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    pairs = swaps(questions, index, args.seed)
    print(f"{len(pairs)} of {len(questions)} questions have a sound swap\n", file=sys.stderr)
    evaluation = SimpleNamespace(device=args.device, batch_size=args.batch_size)
    a = side(args.a, questions, index, pairs, cold_start=args.a_cold_start, args=evaluation)
    b = side(args.b, questions, index, pairs, cold_start=args.b_cold_start, args=evaluation)
    shared = sorted(set(a) & set(b))
    print(f"A: {' '.join(args.a)}{' (cold starts)' if args.a_cold_start else ''}")
    print(f"B: {' '.join(args.b)}{' (cold starts)' if args.b_cold_start else ''}\n")
    print("| answer credited against | A [95 %] | B [95 %] | B − A [95 %] | n |")
    print("|---|---|---|---|---|")
    rows = (
        (0, "the swapped truth (read)"),
        (1, "the real truth (brought along)"),
        (2, "the real truth, its real results (the run's own evaluation)"),
    )
    for column, name in rows:
        xs, ys = [a[q][column] for q in shared], [b[q][column] for q in shared]
        if any(math.isnan(v) for v in xs + ys):
            print(f"| {name} | not recorded | | | |")
            continue
        d = paired_difference(ys, xs)
        diff = f"{d.mean:+.3f} [{d.low:+.3f}, {d.high:+.3f}]"
        diff += " **excludes 0**" if d.excludes(0.0) else ""
        print(f"| {name} | {bootstrap_mean(xs)} | {bootstrap_mean(ys)} | {diff} | {len(shared)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
