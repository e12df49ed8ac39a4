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
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
from engine.search.index import SearchIndex  # noqa: E402


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
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    off = {True: " (rules off)", False: ""}
    before = " (cold starts alone, before RL)" if args.a_cold_start else ""
    print(f"A: {named(args.a)}{off[args.a_rules_off]}{before}")
    print(f"B: {named(args.b)}{off[args.b_rules_off]}\n")
    print("| metric | A [95 %] | B [95 %] | B − A [95 %] | n |\n|---|---|---|---|---|")
    for metric, row in report.items():
        d = row["b_minus_a"]
        held = " **excludes 0**" if d["low"] > 0 or d["high"] < 0 else ""
        cells = [
            f"{row[side]['mean']:.3f} [{row[side]['low']:.3f}, {row[side]['high']:.3f}]"
            for side in ("a", "b")
        ]
        diff = f"{d['mean']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]{held}"
        print(f"| {metric} | {cells[0]} | {cells[1]} | {diff} | {row['n']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
