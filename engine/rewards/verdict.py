"""What a judge says of one answer (engine.rewards.judge holds the judges)."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one answer. `score` is in [0, 1]; `prompt_id` names the wording."""

    correct: bool
    score: float
    reason: str
    prompt_id: str
