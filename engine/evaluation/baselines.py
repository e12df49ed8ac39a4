"""The trained agent against its baselines, read from an evaluation report (a run's
eval.json): one-shot search given as many chunks (echo@K) and the untrained base. The run
page's claim sentence and the goals report (bench/goals.py) read it the same way."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BaselineComparison:
    """The trained agent against one-shot search given as many chunks (echo@K) and against
    the untrained base, from an eval report (a run's eval.json)."""

    k: int
    recall: float
    echo_recall: float
    answer: float
    echo_answer: float
    base_answer: float
    searches_after_miss: float
    chunks: float

    @classmethod
    def of(cls, report: dict | None) -> BaselineComparison | None:
        """None for a report without the trained agent, echo@K and the base side by side."""
        policies = (report or {}).get("policies") or {}
        k = (report or {}).get("echo_k")
        trained, echo, base = (policies.get(name) for name in ("trained", f"echo@{k}", "base"))
        if not (trained and echo and base):
            return None
        try:
            return cls(
                k=k,
                recall=trained["golden_recall"],
                echo_recall=echo["golden_recall"],
                answer=_accuracy(trained),
                echo_answer=_accuracy(echo),
                base_answer=_accuracy(base),
                searches_after_miss=trained["searches_after_miss"],
                chunks=trained["retrieved_chunks"],
            )
        except KeyError:
            return None

    @property
    def recall_times(self) -> float | None:
        """The agent's golden recall over echo@K's; None where echo found nothing."""
        return times(self.recall, self.echo_recall)

    @property
    def answer_times(self) -> float | None:
        return times(self.answer, self.echo_answer)


def _accuracy(metrics: dict) -> float:
    """The share of questions judged correct. Reports written before accuracy was kept hold
    only the partial-credit answer score, which is read in its place for them
    (bench/rejudge.py writes the accuracy of every recorded run)."""
    return metrics["accuracy"] if "accuracy" in metrics else metrics["answer_score"]


def times(value: float, baseline: float) -> float | None:
    """`value` over `baseline`; None where the baseline is 0."""
    return value / baseline if baseline > 0 else None
