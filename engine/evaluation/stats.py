"""Bootstrap intervals over questions: how far a score could move on another draw of questions.

The unit resampled is the question: it is what varies between one development set and the
next. Several training seeds evaluated on the same question are averaged first (`pool_seeds`),
so a question counts once whatever the number of seeds, and the interval covers the questions'
variation with the seeds' averaged out of it.

A difference between two policies is bootstrapped paired: both are scored on the same resampled
questions, so what the questions share (an easy one is easy for both) cancels, and the interval
of the difference is much narrower than the two intervals side by side suggest. A setting is
worth keeping when that interval excludes 0.

Percentile intervals, a fixed seed: the same scores always give the same interval.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

RESAMPLES = 10_000
LEVEL = 0.95
# Resampled indices held at once (resamples × questions): bounds memory on large sets.
_BATCH_CELLS = 4_000_000


@dataclass(frozen=True)
class Interval:
    """A mean over `n` questions and its bootstrap interval [low, high]."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        return f"{self.mean:.3f} [{self.low:.3f}, {self.high:.3f}]"

    def excludes(self, value: float = 0.0) -> bool:
        """Whether `value` lies outside the interval (a difference that holds)."""
        return not self.low <= value <= self.high

    def to_dict(self) -> dict[str, float | int]:
        return {
            "mean": round(self.mean, 4),
            "low": round(self.low, 4),
            "high": round(self.high, 4),
            "n": self.n,
        }


def bootstrap_mean(
    values: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """The mean of `values` (one per question) and its percentile bootstrap interval."""
    x = np.asarray(values, dtype=float)
    if x.ndim != 1 or not len(x):
        raise ValueError("need one value per question, and at least one question")
    if np.isnan(x).any():
        raise ValueError("a question has no value (NaN): drop it or score it")
    rng = np.random.default_rng(seed)
    n = len(x)
    means = np.empty(resamples)
    step = max(1, _BATCH_CELLS // n)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        means[start : start + rows] = x[rng.integers(0, n, size=(rows, n))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    # A constant's resampled means are that constant up to float rounding: report it exactly.
    mean = float(x.mean())
    return Interval(mean, float(min(low, mean)), float(max(high, mean)), n)


def paired_difference(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    resamples: int = RESAMPLES,
    level: float = LEVEL,
    seed: int = 0,
) -> Interval:
    """mean(a) − mean(b) on the same questions (a[i] and b[i] score question i), with the
    interval of the difference over resampled questions (see the module's note)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired scores need the same questions: {len(a)} against {len(b)}")
    return bootstrap_mean(a - b, resamples=resamples, level=level, seed=seed)


def pool_seeds(runs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Per question id, the mean of its scores over the runs (training seeds) that evaluated
    it; a question no run evaluated is absent."""
    totals: dict[str, list[float]] = {}
    for scores in runs:
        for question_id, value in scores.items():
            totals.setdefault(question_id, []).append(float(value))
    return {qid: float(np.mean(values)) for qid, values in totals.items()}
