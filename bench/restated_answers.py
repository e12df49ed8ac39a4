"""How often an agent's held-out answers restate the question, and how often those are right.

    python bench/restated_answers.py --questions Q.jsonl \
        --runs var/a-f0-s0,var/a-f1-s0 var/b-f0-s0,var/b-f1-s0

Each argument of `--runs` is one setting's fold runs, joined by commas. Every held-out answer
of their trained agent (each run's own held-out questions, as `sleuth compare` reads them) is
sorted by the reward's `novelty` rule (`engine.rewards.reward.restates_question`: every content
word of the answer is one of the question's) and judged again by today's offline judge. The
rule is what the optional `novelty` reward component marks down in a wrong answer; this table
says how much of a domain's answers it would touch, and whether a training with it on made
the agent restate the question less. No model runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.pooled import held_out, read_run  # noqa: E402
from engine.rewards.judge import OfflineJudge  # noqa: E402
from engine.rewards.reward import restates_question  # noqa: E402


def count(folders: list[str], questions, judge) -> dict[str, int]:
    totals = {"answers": 0, "restated": 0, "restated right": 0, "others right": 0}
    for folder in folders:
        run = read_run(folder)
        attempts = run.attempts["trained"]
        for question in held_out(run, questions):
            attempt = attempts.get(question.id)
            if attempt is None:
                continue
            answer = attempt.answer or ""
            right = bool(answer) and judge.judge(question.question, question.answer, answer).correct
            restated = restates_question(question.question, answer)
            totals["answers"] += 1
            totals["restated"] += restated
            totals["restated right"] += restated and right
            totals["others right"] += (not restated) and right
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", required=True)
    parser.add_argument("--runs", nargs="+", required=True, help="one setting's folds: a,b")
    args = parser.parse_args(argv)
    questions = load_questions(args.questions)
    judge = OfflineJudge()
    print("| runs | answers | restating the question | right among those | right among the rest |")
    print("|---|---|---|---|---|")
    for group in args.runs:
        c = count(group.split(","), questions, judge)
        rest = c["answers"] - c["restated"]
        print(
            f"| {group} | {c['answers']} | {c['restated']} "
            f"| {c['restated right']} ({c['restated right'] / max(c['restated'], 1):.2f}) "
            f"| {c['others right']} ({c['others right'] / max(rest, 1):.2f}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
