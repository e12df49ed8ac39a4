"""Run several policies on the same questions and put their metrics in one report."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

from engine.agent.trajectory import SamplingParams, Trajectory
from engine.evaluation.metrics import METRIC_KEYS, summarize
from engine.evaluation.policies import Policy


def run_policy(
    policy: Policy,
    questions: Sequence[Any],
    *,
    samples: int,
    sampling: SamplingParams,
    batch_size: int = 16,
    progress: tqdm | None = None,
) -> list[list[Trajectory]]:
    """`samples` trajectories per question, run `batch_size` at a time (so a trajectory's
    wall time is its latency inside one batch, not behind the whole question set)."""
    flat = [q.question for q in questions for _ in range(samples)]
    trajectories: list[Trajectory] = []
    for start in range(0, len(flat), batch_size):
        batch = flat[start : start + batch_size]
        seeded = SamplingParams(sampling.temperature, sampling.top_p, sampling.seed + start)
        trajectories.extend(policy.rollout(batch, seeded))
        if progress is not None:
            progress.update(len(batch))
    return [trajectories[i * samples : (i + 1) * samples] for i in range(len(questions))]


def evaluate(
    policies: dict[str, Policy],
    questions: Sequence[Any],
    *,
    judge: Any,
    count_tokens: Callable[[str], int],
    samples: int = 1,
    sampling: SamplingParams | None = None,
    batch_size: int = 16,
    show_progress: bool = True,
) -> dict[str, Any]:
    """`{"policies": {name: metrics}}` plus, under "trajectories", each policy's samples."""
    sampling = sampling or SamplingParams(temperature=0.0 if samples == 1 else 0.7)
    report: dict[str, Any] = {"policies": {}}
    kept: dict[str, list[list[Trajectory]]] = {}
    for name, policy in policies.items():
        with tqdm(
            total=len(questions) * samples, desc=name, unit="traj", disable=not show_progress
        ) as bar:
            runs = run_policy(
                policy,
                questions,
                samples=samples,
                sampling=sampling,
                batch_size=batch_size,
                progress=bar,
            )
        report["policies"][name] = summarize(questions, runs, judge, count_tokens)
        kept[name] = runs
    return report | {"trajectories": kept}


def write_trajectories(
    path, questions: Sequence[Any], trajectories: dict[str, list[list[Trajectory]]]
) -> None:
    """Every policy's trajectories as JSON lines: the policy, the question's id, the rest."""
    with open(path, "w", encoding="utf-8") as out:
        for name, runs in trajectories.items():
            for question, samples in zip(questions, runs, strict=True):
                for trajectory in samples:
                    record = {"policy": name, "question_id": question.id, **trajectory.to_dict()}
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")


def format_table(report: dict[str, Any]) -> str:
    """The comparison as a fixed-width text table, one row per policy."""
    headers = ["policy", *METRIC_KEYS]
    rows = [
        [name, *(_cell(metrics[key]) for key in METRIC_KEYS)]
        for name, metrics in report["policies"].items()
    ]
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    lines = [
        "  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)) for r in [headers, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)
