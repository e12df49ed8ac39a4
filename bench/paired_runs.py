"""Two settings, each pooled over its fold runs, compared on the same questions.

    python bench/paired_runs.py --questions Q.jsonl --index INDEX \
        --a var/old-f0-s0 var/old-f1-s0 --b var/new-f0-s0 var/new-f1-s0 [--a-rules-off]

How a setting earns its place in a preset (docs/evaluation.md): each side's runs are read as
`sleuth compare` reads them (every question scored by the runs that held it out, averaged over
seeds, the recorded answers judged again by today's offline judge), and the difference B − A
of golden recall, strict accuracy and chunks shown is given with its paired 95 % bootstrap
interval over the questions both sides scored. A gain counts only where the interval excludes
0. Each side must be one setting (runs differing only in seed and fold). `--a-rules-off`
(`--b-rules-off`) runs that side's checkpoints again with every decoding rule off, as
`sleuth compare` does for its "rules off" row: a setting measured against runs recorded
before a rule left the default path. `--a-cold-start` runs A's kept cold starts (each run's
agent before its first RL step) under A's rules: with B the same runs, B − A is RL's share;
a run that took no RL step (`--steps 0`) is its own cold start, read from its final evaluation.

A side given twice or more (`--a RUNS --a RUNS`) pools its groups question by question, each
group one setting, as the same setting's seeds are pooled: a setting's seed recorded in
another form (seed 0's cold starts kept inside RL runs, seed 1's run with `--steps 0`).

`--by-kind` also splits the accuracy by the kind of question, read from its truth and evidence
alone, so fixed before any run: a truth with a sound swap (a figure or rare term of a short
truth that its golden chunks spell: the questions `bench/counterfactual_reading.py` asks), a
truth opening with yes or no, and the other open ones (answers in other words, or inferred: a
count said as a word, a verdict). A setting that teaches reading moves the first; the others
say what it costs elsewhere.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.counterfactual_reading import swaps  # noqa: E402
from engine.agent.greedy_rules import unruled  # noqa: E402
from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.compare import (  # noqa: E402
    cold_start_scores,
    rules_off_scores,
    run_limits,
)
from engine.evaluation.pooled import (  # noqa: E402
    PolicyScores,
    check_one_setting,
    held_out,
    read_run,
    score_attempts,
)
from engine.evaluation.stats import bootstrap_mean, paired_difference, pool_seeds  # noqa: E402
from engine.rewards.judge import OfflineJudge  # noqa: E402
from engine.rewards.text import polarity  # noqa: E402
from engine.search.index import SearchIndex  # noqa: E402

KINDS = ("read, with a sound swap", "yes/no", "other open")


def kinds(questions, index) -> dict[str, str]:
    """Each question's kind (`KINDS`), by its truth and golden chunks alone."""
    swapped = swaps(questions, index, seed=0)
    return {
        q.id: KINDS[0] if q.id in swapped else KINDS[1] if polarity(q.answer) else KINDS[2]
        for q in questions
    }


def by_kind(a: dict[str, float], b: dict[str, float], kind_of: dict[str, str]) -> dict:
    """B − A of per-question accuracy within each kind, with the questions gained and lost."""
    report = {}
    for kind in KINDS:
        shared = sorted(q for q in set(a) & set(b) if kind_of[q] == kind)
        if not shared:
            continue
        xs, ys = [a[q] for q in shared], [b[q] for q in shared]
        report[kind] = {
            "n": len(shared),
            "questions": shared,
            "a": bootstrap_mean(xs).to_dict(),
            "b": bootstrap_mean(ys).to_dict(),
            "b_minus_a": paired_difference(ys, xs).to_dict(),
            "gained": sum(y > x for x, y in zip(xs, ys, strict=True)),
            "lost": sum(y < x for x, y in zip(xs, ys, strict=True)),
        }
    return report


def pooled_groups(groups, questions, judge, **options) -> PolicyScores:
    """Each group pooled over its runs, then the groups pooled question by question (a question
    counts once, with the mean over the groups that scored it)."""
    sides = [pooled(folders, questions, judge, **options) for folders in groups]
    if len(sides) == 1 or any(side.note for side in sides):
        return next((side for side in sides if side.note), sides[0])
    return PolicyScores(
        sides[0].name,
        recall=pool_seeds([side.recall for side in sides]),
        correct=pool_seeds([side.correct for side in sides]),
        chunks=pool_seeds([side.chunks for side in sides]),
        judge_errors=sum(side.judge_errors for side in sides),
    )


def pooled(folders, questions, judge, *, index=None, rules_off=False, cold_start=False):
    runs = [read_run(folder) for folder in folders]
    check_one_setting(runs)
    evaluation = SimpleNamespace(device="auto", batch_size=16)
    # With no RL step the final agent is the cold start: its final evaluation is read.
    cold_start = cold_start and any(run.config.get("steps") for run in runs)
    if cold_start:
        return cold_start_scores(
            runs,
            questions,
            index=index,
            limits=run_limits(runs[0].config),
            judge=judge,
            args=evaluation,
        )
    if rules_off:
        off = unruled(run_limits(runs[0].config))
        return rules_off_scores(
            runs, questions, index=index, limits=off, judge=judge, args=evaluation
        )
    attempts = []
    for run in runs:
        kept = {q.id for q in held_out(run, questions)}
        attempts.append({qid: a for qid, a in run.attempts["trained"].items() if qid in kept})
    return score_attempts("trained", attempts, questions, judge)


def named(groups) -> str:
    return " + ".join(" ".join(folders) for folders in groups)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--index", required=True)
    for side in ("a", "b"):
        parser.add_argument(
            f"--{side}",
            nargs="+",
            action="append",
            required=True,
            help=f"run folders of setting {side.upper()} (again: another group of it, pooled)",
        )
    parser.add_argument("--a-rules-off", action="store_true", help="A's checkpoints, rules off")
    parser.add_argument("--b-rules-off", action="store_true", help="B's checkpoints, rules off")
    parser.add_argument(
        "--a-cold-start",
        action="store_true",
        help="A's cold starts alone (the runs before RL): with --b the same runs, RL's share",
    )
    parser.add_argument(
        "--by-kind", action="store_true", help="accuracy by kind of question as well"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    judge = OfflineJudge()
    a = pooled_groups(
        args.a,
        questions,
        judge,
        index=index,
        rules_off=args.a_rules_off,
        cold_start=args.a_cold_start,
    )
    b = pooled_groups(args.b, questions, judge, index=index, rules_off=args.b_rules_off)
    for side in (a, b):
        if side.note:  # e.g. runs that kept no cold start
            print(f"{side.name}: {side.note}", file=sys.stderr)
            return 2

    report = {}
    for metric in ("recall", "correct", "chunks"):
        left, right = getattr(a, metric), getattr(b, metric)
        shared = sorted(set(left) & set(right))
        if not shared:
            continue
        xs, ys = [left[q] for q in shared], [right[q] for q in shared]
        report["accuracy" if metric == "correct" else metric] = {
            "a": bootstrap_mean(xs).to_dict(),
            "b": bootstrap_mean(ys).to_dict(),
            "b_minus_a": paired_difference(ys, xs).to_dict(),
            "n": len(shared),
        }
    if args.by_kind:
        report["by_kind"] = by_kind(a.correct, b.correct, kinds(questions, index))
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    off = {True: " (rules off)", False: ""}
    before = " (cold starts alone, before RL)" if args.a_cold_start else ""
    print(f"A: {named(args.a)}{off[args.a_rules_off]}{before}")
    print(f"B: {named(args.b)}{off[args.b_rules_off]}\n")
    print("| metric | A [95 %] | B [95 %] | B − A [95 %] | n |\n|---|---|---|---|---|")
    kinds_report = report.pop("by_kind", None)
    for metric, row in report.items():
        cells = _cells(row)
        print(f"| {metric} | {cells[0]} | {cells[1]} | {cells[2]} | {row['n']} |")
    if kinds_report:
        print("\n| accuracy by kind | A [95 %] | B [95 %] | B − A [95 %] | n | gained, lost |")
        print("|---|---|---|---|---|---|")
        for kind, row in kinds_report.items():
            cells = _cells(row)
            changed = f"{row['gained']}, {row['lost']}"
            print(f"| {kind} | {cells[0]} | {cells[1]} | {cells[2]} | {row['n']} | {changed} |")
    return 0


def _cells(row: dict) -> list[str]:
    """A, B and B − A of a report row as the tables print them."""
    d = row["b_minus_a"]
    held = " **excludes 0**" if d["low"] > 0 or d["high"] < 0 else ""
    return [
        *(
            f"{row[side]['mean']:.3f} [{row[side]['low']:.3f}, {row[side]['high']:.3f}]"
            for side in ("a", "b")
        ),
        f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]{held}",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
