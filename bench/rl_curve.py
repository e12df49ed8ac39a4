"""RL's learning curve, read from the runs' own logs: what each validation measured, with the
training steps between validations summarized beside it.

    python bench/rl_curve.py var/run-f0-s0 var/run-f1-s0

A run validated during training (`--eval-every N`, as `cpu-3h` does) logs `val/` metrics at
step 0 (the cold start's level, before any RL step) and every N steps: one sample a question
at the rollout temperature on its held-out questions. Given the fold runs of one setting, the
table gives, per validation step, the mean over the runs that reached it of validation
accuracy and golden recall (each fold's held-out questions, so the mean is over every
development question once), then the training steps since the previous validation: mean
reward, the share of samples judged right, the samples' golden recall, the groups whose
rewards tied (of `questions_per_step`) and the policy's entropy; and how many training
questions RL had stopped asking by then (held back or retired: `--hold-back-after`,
`--retire-after`), a mean over the runs. No model runs.

A sampled validation of one sample a question is noisy (about ±0.06 on 124 questions); the
paired comparison of the final greedy evaluations (`bench/paired_runs.py`) against the same
command's cold start alone is what decides whether RL added anything.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.rewards.reward import OPTIONAL_COMPONENTS  # noqa: E402

TRAINING_COLUMNS = (
    ("reward/total", "reward"),
    ("accuracy", "samples right"),
    ("golden_recall", "samples' recall"),
    ("groups_dropped", "groups tied"),
    ("entropy", "entropy"),
)
# The reward's optional components: a column only where a run weighted them, so a run with
# `novelty` on shows how often its samples answered wrong in the question's own words, or not at
# all (1 − the column), as RL went on.
OPTIONAL_COLUMNS = tuple((f"reward/{name}", name) for name in OPTIONAL_COMPONENTS)


def read_metrics(run: Path) -> list[dict]:
    path = run / "metrics.jsonl"
    if not path.exists():
        raise SystemExit(f"{run}: no metrics.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def curve(runs: list[list[dict]]) -> list[dict]:
    """One row per validation step any run reached: the validations' means over the runs
    that reached it, and the training records since the previous validation, pooled."""
    steps = sorted({r["step"] for records in runs for r in records if "val/accuracy" in r})
    rows, previous = [], -1
    for step in steps:
        validated = [
            r for records in runs for r in records if r["step"] == step and "val/accuracy" in r
        ]
        trained = [
            r
            for records in runs
            for r in records
            if previous < r["step"] <= step and "reward/total" in r
        ]
        row = {
            "step": step,
            "runs": len(validated),
            "val accuracy": _mean(r["val/accuracy"] for r in validated),
            "val recall": _mean(r["val/golden_recall"] for r in validated),
            "training steps": len(trained),
        }
        for key, label in TRAINING_COLUMNS + OPTIONAL_COLUMNS:
            row[label] = _mean(r[key] for r in trained if key in r) if trained else None
        # Each run's count at its last training step so far: RL's questions left to ask.
        row["held back"] = _mean(
            last["held_back"]
            for records in runs
            if (last := _last([r for r in records if r["step"] <= step and "held_back" in r]))
        )
        rows.append(row)
        previous = step
    return rows


def _last(records: list[dict]) -> dict | None:
    return max(records, key=lambda r: r["step"]) if records else None


def _mean(values) -> float | None:
    values = list(values)
    return sum(values) / len(values) if values else None


def markdown(rows: list[dict]) -> str:
    labels = ["step", "runs", "val accuracy", "val recall", "training steps"]
    labels += [label for _, label in TRAINING_COLUMNS]
    labels += [
        label for _, label in OPTIONAL_COLUMNS if any(row[label] is not None for row in rows)
    ]
    labels += ["held back"]
    lines = ["| " + " | ".join(labels) + " |", "|" + "---|" * len(labels)]
    for row in rows:
        cells = []
        for label in labels:
            value = row[label]
            if value is None:
                cells.append("—")
            elif isinstance(value, float):
                wide = label in ("groups tied", "held back")
                cells.append(f"{value:.2f}" if wide else f"{value:.3f}")
            else:
                cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="run folders of one setting (folds)")
    args = parser.parse_args(argv)
    rows = curve([read_metrics(run) for run in args.runs])
    if not rows:
        raise SystemExit("no validation logged: train with --eval-every N (cpu-3h does)")
    print(markdown(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
