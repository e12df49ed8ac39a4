"""Recorded runs' answers judged again by today's offline judge, beside the score recorded.

A run folder keeps the trained agent's answers (`eval_trajectories.jsonl[.gz]`); when the
offline judge is corrected, the scores recorded in `eval.json` were judged by the old one.
This prints, per run, the answer score recorded and the score of the same answers judged now,
and every answer whose verdict changed, so that a correction's effect on the record is seen
whole rather than on the one run that revealed it. No model runs.

With `--write`, each policy whose score changed gets it in the run's `eval.json`, beside a
`rejudged` note of the score recorded. Runs before proof113 kept the trained agent's answers
only, so echo's and the base's stay as recorded there: a stricter judge can only lower them.

Usage: python bench/rejudge.py [RUN_DIR …] [--questions PATH] [--write]
       (default: every docs/runs/proof* folder and financebench-dev's questions)
"""

import argparse
import gzip
import json
import re
from pathlib import Path

from workers.documents.questions import load_questions
from workers.rewards.judge import OfflineJudge

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QUESTIONS = REPO.parent / "shared/datasets/financebench-dev/questions.jsonl"


def read_trajectories(run: Path) -> list[dict]:
    for name, opener in (
        ("eval_trajectories.jsonl.gz", gzip.open),
        ("eval_trajectories.jsonl", open),
    ):
        if (run / name).exists():
            with opener(run / name, "rt") as lines:
                return [json.loads(line) for line in lines if line.strip()]
    return []


def write_score(report_path: Path, policy: str, score: float) -> None:
    report = json.loads(report_path.read_text())
    metrics = report["policies"].get(policy)
    if metrics is None or metrics["answer_score"] == score:
        return
    notes = report.get("rejudged", {})
    if isinstance(notes, str):  # written when runs kept the trained agent's answers only
        notes = {"trained": notes}
    notes.setdefault(
        policy,
        f"answer_score as recorded was {metrics['answer_score']}; judged again by bench/rejudge.py",
    )
    report["rejudged"] = notes
    metrics["answer_score"] = score
    report_path.write_text(json.dumps(report, indent=2) + "\n")


def run_number(run: Path) -> tuple[int, str]:
    found = re.search(r"\d+", run.name)
    return (int(found.group()) if found else -1, run.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--questions", default=DEFAULT_QUESTIONS)
    parser.add_argument("--write", action="store_true", help="correct the runs' eval.json")
    args = parser.parse_args()
    runs = args.runs or sorted((REPO / "docs/runs").glob("proof*"), key=run_number)
    questions = {q.id: q for q in load_questions(args.questions)}
    judge = OfflineJudge()
    print(f"{'run':<14} {'policy':<10} {'n':>3} {'recorded':>9} {'now':>7}")
    for run in runs:
        by_policy: dict[str, list[tuple[float, float]]] = {}
        changed: dict[str, list[str]] = {}
        for trajectory in read_trajectories(run):
            question = questions.get(trajectory["question_id"])
            if question is None:
                continue
            answer = trajectory.get("answer") or ""
            now = judge.judge(question.question, question.answer, answer).score
            recorded = trajectory["judge_score"]
            by_policy.setdefault(trajectory["policy"], []).append((recorded, now))
            if abs(now - recorded) > 1e-9:
                changed.setdefault(trajectory["policy"], []).append(
                    f"    {trajectory['policy']:<8} {recorded:.2f} -> {now:.2f}  {answer[:60]!r}"
                )
        for policy, scores in by_policy.items():
            recorded = sum(r for r, _ in scores) / len(scores)
            now = sum(n for _, n in scores) / len(scores)
            print(f"{run.name:<14} {policy:<10} {len(scores):>3} {recorded:>9.3f} {now:>7.3f}")
            if args.write and policy in changed:
                write_score(run / "eval.json", policy, round(now, 4))
        for lines in changed.values():
            print("\n".join(lines))


if __name__ == "__main__":
    main()
