"""A judge against the labelled judge set: how often it agrees, and how often it credits a
wrong answer.

The set (tests/data/judge_set.jsonl) holds question, truth, answer and a verdict labelled by
reading, with a reason each. The offline judge is run by default; with --base-url and
--model, an OpenAI-compatible model judges instead, with its key from $SLEUTH_JUDGE_API_KEY,
sampling its equivalent prompts as in training (--seed fixes the sampling). The baseline is
the labels themselves: agreement is the share of lines judged as labelled, the false-credit
rate the share of wrong answers judged correct. A judge that cannot decide a line is counted
as disagreeing and listed.

Usage: python bench/judge_agreement.py [--set PATH] [--base-url URL --model NAME]
       [--concurrency N] [--seed N] [--show N]
"""

import argparse
import json
import os
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from engine.rewards.judge import CLI_KEY_ENV, JudgeError, OfflineJudge, OpenAIJudge

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SET = REPO / "tests/data/judge_set.jsonl"


def load_set(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", type=Path, default=DEFAULT_SET)
    parser.add_argument("--base-url", default="", help="an OpenAI-compatible endpoint")
    parser.add_argument("--model", default="")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--show", type=int, default=40, help="disagreements to print")
    args = parser.parse_args()
    if args.base_url and not args.model:
        sys.exit("--base-url needs --model: the name the endpoint serves")
    rows = load_set(args.set)
    if args.base_url:
        judge = OpenAIJudge(
            base_url=args.base_url,
            api_key=os.environ.get(CLI_KEY_ENV, ""),
            model=args.model,
            timeout=args.timeout,
            seed=args.seed,
        )
        name, workers = f"{args.model} at {args.base_url}", args.concurrency
    else:
        judge, name, workers = OfflineJudge(), "offline", 1

    def verdict(row: dict) -> bool | None:
        try:
            return judge.judge(row["question"], row["truth"], row["answer"]).correct
        except JudgeError as error:
            print(f"judge error: {error}", file=sys.stderr)
            return None

    with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
        judged = list(pool.map(verdict, rows))

    wrong = [r for r in rows if not r["verdict"]]
    disagree = [(r, j) for r, j in zip(rows, judged, strict=True) if j is not r["verdict"]]
    credited = [r for r, j in zip(rows, judged, strict=True) if j is True and not r["verdict"]]
    errors = sum(j is None for j in judged)
    print(f"judge: {name}")
    print(f"set:   {args.set} ({len(rows)} lines, {len(wrong)} wrong answers)")
    print(
        f"agreement:         {1 - len(disagree) / len(rows):.3f} ({len(rows) - len(disagree)}"
        f"/{len(rows)})"
    )
    print(
        f"false-credit rate: {len(credited) / max(len(wrong), 1):.3f} ({len(credited)}"
        f"/{len(wrong)} wrong answers judged correct)"
    )
    if errors:
        print(f"undecided:         {errors} lines (counted as disagreeing)")
    by_source = Counter(r["source"].split(":")[0] for r, _ in disagree)
    if by_source:
        print("disagreements by source: " + ", ".join(f"{k} {v}" for k, v in by_source.items()))
    for row, judged_as in disagree[: args.show]:
        said = {True: "correct", False: "wrong", None: "undecided"}[judged_as]
        print(
            f"  labelled {'correct' if row['verdict'] else 'wrong'}, judged {said} "
            f"[{row['source']}] truth={row['truth'][:60]!r} answer={row['answer'][:80]!r}"
        )


if __name__ == "__main__":
    main()
