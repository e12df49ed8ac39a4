"""The goals a trained agent was held to (issue 17), read from finished runs:

    python bench/goals.py RUN...


A run folder written by `sleuth train` holds eval.json (the trained agent against echo@K and
the untrained base on companies it never trained on), summary.json (the whole command's
minutes) and config.json (which entities were held out). The goals, from issue 17:

- golden recall >= 0.50 and >= 2x echo's at the same chunk count (echo@K, K the agent's
  distinct chunks rounded up);
- >= 1.5 searches a question where the first search misses;
- answer accuracy (the share judged correct) >= 0.10 and >= 2x echo@K's and the base's;
- the whole command within 45 minutes.

`goals_table` prints them for several runs side by side with their mean, as the README shows
them, so the table there is this command's output and not a hand copy. A last row, no goal,
says what each run's minutes bought on its machine (precision, the cold start's epochs, RL
steps): the same preset trains about half as much on a CPU without bfloat16 instructions.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.evaluation.baselines import BaselineComparison, times  # noqa: E402

RECALL_FLOOR = 0.50
ANSWER_FLOOR = 0.10
TIMES_BASELINE = 2.0
SEARCHES_AFTER_MISS = 1.5
MAX_MINUTES = 45.0


class RunFolderError(ValueError):
    """A folder that is not a finished run (no eval.json, or one in another format)."""


@dataclass(frozen=True)
class RunResult:
    """What the goals need from one finished run."""

    name: str
    split_seed: int
    minutes: float
    questions: int
    scores: BaselineComparison
    # What the run's time bought (summary.json; absent from runs before they were written).
    rl_steps: float | None = None
    precision: str | None = None
    cold_start_epochs: float | None = None

    @classmethod
    def read(cls, folder: str | Path) -> RunResult:
        folder = Path(folder)
        try:
            report = json.loads((folder / "eval.json").read_text())
            summary = json.loads((folder / "summary.json").read_text())
            config = json.loads((folder / "config.json").read_text())
        except FileNotFoundError as exc:
            raise RunFolderError(
                f"{folder}: no {Path(exc.filename).name}; is it a finished `sleuth train` run "
                "(without --no-final-eval)?"
            ) from None
        except json.JSONDecodeError as exc:
            raise RunFolderError(f"{folder}: unreadable JSON ({exc})") from None
        scores = BaselineComparison.of(report)
        if scores is None or "questions" not in report or "minutes" not in summary:
            raise RunFolderError(
                f"{folder}: eval.json lacks the trained agent, echo@K or the base side by side, "
                "or summary.json its minutes"
            )
        split_seed = config.get("split_seed")
        return cls(
            name=folder.name,
            split_seed=config.get("seed", 0) if split_seed is None else split_seed,
            minutes=summary["minutes"],
            questions=report["questions"],
            scores=scores,
            rl_steps=summary.get("steps"),
            precision=summary.get("precision"),
            cold_start_epochs=summary.get("cold_start_epochs"),
        )


def _at_least_twice(value: float, baseline: float) -> bool:
    return value >= TIMES_BASELINE * baseline


def _times_text(value: float, baseline: float) -> str:
    ratio = times(value, baseline)
    return "∞×" if ratio is None else f"{ratio:.2f}×"


def recall_met(run: RunResult) -> bool:
    s = run.scores
    return s.recall >= RECALL_FLOOR and _at_least_twice(s.recall, s.echo_recall)


def searches_met(run: RunResult) -> bool:
    return run.scores.searches_after_miss >= SEARCHES_AFTER_MISS


def answer_met(run: RunResult) -> bool:
    s = run.scores
    return (
        s.answer >= ANSWER_FLOOR
        and _at_least_twice(s.answer, s.echo_answer)
        and _at_least_twice(s.answer, s.base_answer)
    )


def minutes_met(run: RunResult) -> bool:
    return run.minutes <= MAX_MINUTES


def _recall_cell(run: RunResult) -> str:
    s = run.scores
    return (
        f"{s.recall:.3f} at {s.chunks:.2f} chunks, "
        f"{_times_text(s.recall, s.echo_recall)} echo@{s.k} ({s.echo_recall:.3f})"
    )


def _answer_cell(run: RunResult) -> str:
    s = run.scores
    return (
        f"{s.answer:.3f}, {_times_text(s.answer, s.echo_answer)} echo@{s.k} "
        f"({s.echo_answer:.3f}), base {s.base_answer:.3f}"
    )


@dataclass(frozen=True)
class Goal:
    name: str
    cell: Callable[[RunResult], str]
    met: Callable[[RunResult], bool]


GOALS: tuple[Goal, ...] = (
    Goal(
        f"golden recall ≥ {RECALL_FLOOR:.2f} and ≥ {TIMES_BASELINE:g}× echo's at the same chunks",
        _recall_cell,
        recall_met,
    ),
    Goal(
        f"≥ {SEARCHES_AFTER_MISS:g} searches a question where the first misses",
        lambda run: f"{run.scores.searches_after_miss:.2f}",
        searches_met,
    ),
    Goal(
        f"accuracy ≥ {ANSWER_FLOOR:.2f} and ≥ {TIMES_BASELINE:g}× echo's and the base's",
        _answer_cell,
        answer_met,
    ),
    Goal(
        f"the whole command ≤ {MAX_MINUTES:g} minutes",
        lambda run: f"{run.minutes:.1f} min",
        minutes_met,
    ),
)


def mean_run(runs: Sequence[RunResult]) -> RunResult:
    """The runs' mean, each figure averaged (a ratio is then the means' ratio)."""

    def mean(values) -> float | None:
        values = list(values)
        return None if None in values else sum(values) / len(values)

    scores = [run.scores for run in runs]
    # RL's share is an interval of each run's own questions: no mean of them is one.
    averaged = {
        field.name: mean(getattr(s, field.name) for s in scores)
        for field in fields(BaselineComparison)
        if field.name not in ("k", "rl_share")
    }

    def mean_known(name: str) -> float | None:
        return mean(getattr(run, name) for run in runs)

    precisions = {run.precision for run in runs}
    return RunResult(
        name="mean",
        split_seed=-1,
        minutes=mean(run.minutes for run in runs),
        questions=sum(run.questions for run in runs),
        scores=BaselineComparison(k=max(s.k for s in scores), **averaged),
        rl_steps=mean_known("rl_steps"),
        precision=precisions.pop() if len(precisions) == 1 else None,
        cold_start_epochs=mean_known("cold_start_epochs"),
    )


def _training_cell(run: RunResult) -> str:
    """What the run trained, as far as its summary says: "float32, 0.42 epoch of cold
    start, 6 RL steps"."""
    parts = []
    if run.precision:
        parts.append(run.precision)
    if run.cold_start_epochs is not None:
        parts.append(f"{run.cold_start_epochs:.2f} epoch of cold start")
    if run.rl_steps is not None:
        parts.append(f"{round(run.rl_steps, 1):g} RL steps")  # a mean: "6.3"
    return ", ".join(parts) or "–"


def goals_table(runs: Sequence[RunResult]) -> str:
    """A Markdown table: one row a goal, one column a run and one their mean, and whether
    the goal is met by every run, with the splits (`--split-seed`) that meet it."""
    if not runs:
        raise ValueError("no runs to report")
    mean = mean_run(runs)
    headers = [
        "goal",
        *(f"seed {run.split_seed}: {run.name} ({run.questions} q)" for run in runs),
        "mean",
        "met",
    ]
    rows = []
    for goal in GOALS:
        meeting = [run for run in runs if goal.met(run)]
        if len(meeting) == len(runs):
            verdict = "yes, by every run"
        elif meeting:
            seeds = ", ".join(str(s) for s in sorted({run.split_seed for run in meeting}))
            verdict = f"by {len(meeting)} of {len(runs)} runs (seed {seeds})"
        else:
            verdict = "no"
        rows.append(
            [
                goal.name,
                *(_marked(goal.cell(run), goal.met(run)) for run in runs),
                _marked(goal.cell(mean), goal.met(mean)),
                verdict,
            ]
        )
    rows.append(["what the minutes bought (no goal)", *map(_training_cell, [*runs, mean]), "–"])
    lines = [headers, ["---"] + ["---"] * (len(headers) - 1), *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def _marked(cell: str, met: bool) -> str:
    return f"**{cell}**" if met else cell


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Finished runs against the goals, as Markdown.")
    parser.add_argument("runs", nargs="+", help="run folders written by `sleuth train`")
    args = parser.parse_args(argv)
    try:
        runs = [RunResult.read(folder) for folder in args.runs]
    except RunFolderError as exc:
        print(f"goals: {exc}", file=sys.stderr)
        return 2
    print(goals_table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
