"""Recorded runs' answers judged again by today's offline judge, beside what was recorded.

A run folder keeps its held-out answers (`eval_trajectories.jsonl[.gz]`); the numbers in its
`eval.json` were judged by the judge of its day. This judges every kept answer again and
prints, per run and policy, the answer score recorded (the first one recorded, before any
earlier re-judging), the strict accuracy now (the share of questions whose answer the judge
finds correct) and the answer score now (the reward's partial-credit mean), then every
answer credited now and every answer that lost the full credit it was recorded with. No
model runs.

With `--write`, each policy whose answers were kept gets `accuracy`, `answer_score` and
`pass@k` as judged now in the run's `eval.json`, and a `rejudged` note that keeps the numbers
recorded. Runs before proof113 kept the trained agent's answers only: echo's and the base's
numbers there stay as recorded, with no accuracy.

Usage: python bench/rejudge.py [RUN_DIR …] [--questions PATH] [--write]
       (default: every docs/results/runs/proof* folder and financebench-dev's questions)
"""

import argparse
import gzip
import json
import re
import sys
from datetime import date
from pathlib import Path

from engine.documents.questions import load_questions
from engine.rewards.judge import OfflineJudge

REPO = Path(__file__).resolve().parents[1]
DEFAULT_QUESTIONS = REPO.parent / "shared/datasets/financebench-dev/questions.jsonl"
_RECORDED = re.compile(r"answer_score as recorded was ([0-9.]+)")


def read_trajectories(run: Path) -> list[dict]:
    for name, opener in (
        ("eval_trajectories.jsonl.gz", gzip.open),
        ("eval_trajectories.jsonl", open),
    ):
        if (run / name).exists():
            with opener(run / name, "rt") as lines:
                return [json.loads(line) for line in lines if line.strip()]
    return []


def recorded(report: dict, policy: str) -> dict:
    """The numbers first recorded for `policy`: an earlier re-judging's note keeps its
    answer score; otherwise eval.json's own numbers are the recorded ones."""
    metrics = report["policies"].get(policy, {})
    note = report.get("rejudged")
    if isinstance(note, str):  # written when runs kept the trained agent's answers only
        note = {"trained": note}
    note = (note or {}).get(policy)
    if isinstance(note, dict):
        return dict(note["recorded"])
    first = {key: metrics[key] for key in ("answer_score", "pass@k") if key in metrics}
    found = _RECORDED.search(note or "")
    if found:
        first["answer_score"] = float(found.group(1))
    return first


def write(report_path: Path, now: dict[str, dict]) -> None:
    report = json.loads(report_path.read_text())
    notes = report.get("rejudged") or {}
    if isinstance(notes, str):
        notes = {"trained": notes}
    for policy, numbers in now.items():
        metrics = report["policies"].get(policy)
        if metrics is None:
            continue
        notes[policy] = {
            "recorded": recorded(report, policy),
            "note": (
                f"judged again by bench/rejudge.py on {date.today().isoformat()} with the "
                "strict offline judge (tests/data/judge_set.jsonl; docs/judge-rejudge.md): "
                "accuracy added, answer_score and pass@k as judged now"
            ),
        }
        metrics.update(numbers)
        # accuracy first, as evaluation writes it now
        report["policies"][policy] = {"accuracy": metrics.pop("accuracy"), **metrics}
    for policy in report["policies"]:
        if policy not in now:
            notes[policy] = {
                "recorded": recorded(report, policy),
                "note": "answers not kept: as recorded by the judge of its day, no accuracy",
            }
    report["rejudged"] = notes
    report_path.write_text(json.dumps(report, indent=2) + "\n")


def run_number(run: Path) -> tuple[int, str]:
    found = re.search(r"\d+", run.name)
    return (int(found.group()) if found else -1, run.name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--questions", default=DEFAULT_QUESTIONS)
    parser.add_argument("--write", action="store_true", help="update the runs' eval.json")
    args = parser.parse_args(argv)
    runs = args.runs or sorted((REPO / "docs/results/runs").glob("proof*"), key=run_number)
    questions = {q.id: q for q in load_questions(args.questions)}
    judge = OfflineJudge()
    header = f"| {'run':<12} | {'policy':<7} | {'n':>3} | recorded answer_score | "
    print(header + "accuracy now | answer_score now |")
    print("|" + "|".join("-" * (len(c) + 0) for c in header.split("|")[1:-1]) + "|---|---|")
    credited, lost = [], []
    for run in runs:
        if not (run / "eval.json").exists():
            # A run stopped before its evaluation has nothing to judge again; it must not stop
            # the runs after it from being judged (it once left a batch half written).
            print(f"| {run.name} | (no eval.json: skipped) |", file=sys.stderr)
            continue
        report = json.loads((run / "eval.json").read_text())
        by_policy: dict[str, list[tuple[str, bool, float]]] = {}
        for trajectory in read_trajectories(run):
            question = questions.get(trajectory["question_id"])
            if question is None:
                continue
            answer = trajectory.get("answer") or ""
            verdict = judge.judge(question.question, question.answer, answer)
            policy = trajectory["policy"]
            by_policy.setdefault(policy, []).append((question.id, verdict.correct, verdict.score))
            if verdict.correct:
                credited.append(f"{run.name} {policy}: {answer[:70]!r} ({verdict.reason})")
            elif trajectory.get("judge_score") == 1.0:
                lost.append(f"{run.name} {policy}: {answer[:70]!r} ({verdict.reason})")
        now = {}
        for policy in report["policies"]:
            first = recorded(report, policy).get("answer_score", float("nan"))
            judged = by_policy.get(policy)
            if not judged:
                print(
                    f"| {run.name:<12} | {policy:<7} |     | {first:21.3f} | {'-':>12} | "
                    f"{'- (answers not kept)':>16} |"
                )
                continue
            right = {qid for qid, ok, _ in judged if ok}
            numbers = {
                "accuracy": round(sum(ok for _, ok, _ in judged) / len(judged), 4),
                "answer_score": round(sum(s for _, _, s in judged) / len(judged), 4),
                "pass@k": round(len(right) / len({qid for qid, _, _ in judged}), 4),
            }
            now[policy] = numbers
            print(
                f"| {run.name:<12} | {policy:<7} | {len(judged):>3} | {first:21.3f} | "
                f"{numbers['accuracy']:12.3f} | {numbers['answer_score']:16.3f} |"
            )
        if args.write and now:
            write(run / "eval.json", now)
    print(f"\nanswers credited now ({len(credited)}):")
    print("\n".join(f"  {line}" for line in credited))
    print(f"\nanswers recorded with full credit, not correct now ({len(lost)}):")
    print("\n".join(f"  {line}" for line in lost))


if __name__ == "__main__":
    main()
