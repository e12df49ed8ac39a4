"""The trained agent against its baselines, read from an evaluation report (a run's
eval.json): one-shot search given as many chunks (echo@K) and the untrained base. The run
page's claim sentence and the goals report (bench/goals.py) read it the same way."""

from __future__ import annotations

from dataclasses import dataclass

COLD_START = "cold-start"  # the report's name for the run's agent before RL (training.evaluate)


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
    # The same run before RL (its cold start alone), where the run kept it, and RL's share:
    # the trained agent less it, {"recall": interval, "accuracy": interval} (eval.json's).
    cold_recall: float | None = None
    cold_answer: float | None = None
    rl_share: dict | None = None

    @classmethod
    def of(cls, report: dict | None) -> BaselineComparison | None:
        """None for a report without the trained agent, echo@K and the base side by side."""
        policies = (report or {}).get("policies") or {}
        k = (report or {}).get("echo_k")
        trained, echo, base = (policies.get(name) for name in ("trained", f"echo@{k}", "base"))
        if not (trained and echo and base):
            return None
        cold = policies.get(COLD_START)
        share = (report or {}).get("rl_share") or {}
        share = share if share.get("recall") and share.get("accuracy") else None
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
                cold_recall=cold["golden_recall"] if cold and share else None,
                cold_answer=_accuracy(cold) if cold and share else None,
                rl_share=share if cold else None,
            )
        except KeyError:
            return None

    @property
    def rl_share_holds(self) -> bool:
        """Whether RL's share, on recall or on accuracy, has an interval that excludes 0."""
        return any(d and (d["low"] > 0 or d["high"] < 0) for d in (self.rl_share or {}).values())

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
