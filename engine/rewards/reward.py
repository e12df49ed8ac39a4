"""The reward of one trajectory, as separately logged components with per-run weights.

total = Σ weight[c] · component[c] over
- correctness:   the judge's score when it calls the answer correct, else 0. With
                 `require_evidence`, an answer given without any search earns 0.
- conciseness:   a length score relative to the ground truth, minus a penalty for each
                 kind of padding (emoji, markdown, shouting) the ground truth does not use,
                 times correctness: being brief only pays when being right, otherwise the
                 cheapest reward would be a short wrong answer.
- golden_recall: the share of the question's golden chunks shown to the agent in any
                 search result; no judge can be talked into it. 0 when the question has
                 no golden chunks (then `details` says so).
- format:        1 for a clean finish with an answer, 0 for no answer or a turn/token
                 limit, less a penalty per malformed tool call or stray tag in the answer.
- calibration:   only when its weight is above 0: 1 − (confidence − correct)², a Brier
                 score that rewards being right about being right; 0 with no confidence.
- novelty:       only when its weight is above 0: 0 for a wrong answer made only of the
                 question's own words ("Failing assertion" for "What exception does a
                 failing assert raise?"), or no answer; else 1. A small student that has
                 not read its results restates the question; such an answer is rarely right,
                 and a group whose wrong answers differ only in that ties under the other
                 components, so RL learns nothing from it.
"""

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from typing import Any, ClassVar

from engine.rewards import text
from engine.rewards.judge import Judge, JudgeConfig, JudgeError, OfflineJudge
from engine.settings import Settings

FINISH_REASONS = ("answer", "max_turns", "max_tokens", "malformed", "no_answer")
COMPONENTS = ("correctness", "conciseness", "golden_recall", "format", "calibration", "novelty")
# Computed, logged and shown only when weighted above 0.
OPTIONAL_COMPONENTS = ("calibration", "novelty")
DEFAULT_WEIGHTS = {
    "correctness": 0.6,
    "conciseness": 0.1,
    "golden_recall": 0.2,
    "format": 0.1,
    "calibration": 0.0,
    "novelty": 0.0,
}
# Longer answers and ground truths are cut before any component reads them: the judge
# compares every number of one with every number of the other, so an unbounded text (a
# preview's sample answer, a question file's answer) would pin a web or training worker.
MAX_ANSWER_CHARS = 2000
MAX_TRUTH_CHARS = 1000
_STRAY_TAG = re.compile(r"</?\s*(?:search|answer|results?|tool_call|think)\b[^>]*>", re.I)


@dataclass
class RewardInput:
    """What the reward needs from one trajectory."""

    question: str
    ground_truth: str
    answer: str | None
    retrieved_chunk_ids: list[str]  # every chunk shown in any search result, in order
    golden_chunk_ids: list[str]
    searches: int
    finish_reason: str  # one of FINISH_REASONS
    malformed_calls: int = 0
    confidence: float | None = None


@dataclass
class RewardConfig(Settings):
    """A run's reward settings; stored with the run as JSON (`to_dict` / `from_dict`)."""

    SETTINGS_LABEL: ClassVar[str] = "reward"

    weights: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    require_evidence: bool = True
    judge: JudgeConfig | None = None  # None: the offline judge
    # An answer may run to length_ratio × the ground truth's words (at least the truth's
    # words + length_slack) before its conciseness decays as allowance / words.
    length_ratio: float = 2.0
    length_slack: int = 10
    decoration_penalty: float = 0.5  # per kind of padding
    malformed_penalty: float = 0.25  # per malformed tool call or stray tag

    def __post_init__(self) -> None:
        unknown = sorted(set(self.weights) - set(COMPONENTS))
        if unknown:
            raise ValueError(f"unknown reward components {unknown}; known: {list(COMPONENTS)}")
        negative = sorted(name for name, w in self.weights.items() if w < 0)
        if negative:
            raise ValueError(f"reward weights must not be negative: {negative}")
        self.weights = {**{name: 0.0 for name in COMPONENTS}, **self.weights}

    @property
    def components(self) -> list[str]:
        """The components this config computes: the optional ones only when weighted."""
        return [
            name
            for name in COMPONENTS
            if name not in OPTIONAL_COMPONENTS or self.weights.get(name, 0.0) > 0
        ]


@dataclass
class RewardBreakdown:
    """The total, each component (as logged), and why: judge reason, prompt id, errors."""

    total: float
    components: dict[str, float]
    details: dict[str, Any]
    errors: list[str] = field(default_factory=list)  # e.g. a judge that could not answer
    # The judge's verdict on an answer the reward accepts (after a search, when evidence is
    # required): the one definition of a correct answer that training counts.
    correct: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_metrics(self) -> dict[str, float]:
        """Flat numbers for a trajectory's `reward` field and the per-step metrics: the
        total, each component, correct (1.0 for a correct answer) and judge_failed (1.0
        when the judge could not decide)."""
        failed = 1.0 if self.details.get("judge_failed") else 0.0
        return {
            "total": self.total,
            **self.components,
            "correct": float(self.correct),
            "judge_failed": failed,
        }


def compute_reward(inp: RewardInput, config: RewardConfig, judge: Judge) -> RewardBreakdown:
    """Score one trajectory. A failing judge is recorded (correctness 0, `errors`), not raised."""
    if inp.finish_reason not in FINISH_REASONS:
        raise ValueError(f"finish_reason {inp.finish_reason!r} is not one of {FINISH_REASONS}")
    details: dict[str, Any] = {}
    errors: list[str] = []
    answer = (inp.answer or "").strip()
    if len(answer) > MAX_ANSWER_CHARS:
        details["answer_truncated"] = len(answer)
        answer = answer[:MAX_ANSWER_CHARS]
    if len(inp.ground_truth or "") > MAX_TRUTH_CHARS:
        details["ground_truth_truncated"] = len(inp.ground_truth)
        inp = replace(inp, ground_truth=inp.ground_truth[:MAX_TRUTH_CHARS])

    correct, correctness = _correctness(inp, answer, config, judge, details, errors)
    components = {
        "correctness": correctness,
        "conciseness": _conciseness(inp, answer, config, details) * correctness,
        "golden_recall": _golden_recall(inp, details),
        "format": _format(inp, answer, config, details),
    }
    if config.weights["calibration"] > 0:
        components["calibration"] = _calibration(inp, correct, details)
    if config.weights["novelty"] > 0:
        components["novelty"] = _novelty(inp, answer, correct, details)
    components = {name: round(value, 4) for name, value in components.items()}
    total = sum(config.weights[name] * value for name, value in components.items())
    if errors:
        details["errors"] = errors
    return RewardBreakdown(round(total, 4), components, details, errors, correct)


def compute_rewards(
    inputs: list[RewardInput], config: RewardConfig, judge: Judge
) -> list[RewardBreakdown]:
    """Score many trajectories, in order; API judge calls run concurrently."""
    workers = config.judge.concurrency if config.judge else 1
    if isinstance(judge, OfflineJudge) or workers <= 1 or len(inputs) <= 1:
        return [compute_reward(inp, config, judge) for inp in inputs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(lambda inp: compute_reward(inp, config, judge), inputs))


def _correctness(
    inp: RewardInput,
    answer: str,
    config: RewardConfig,
    judge: Judge,
    details: dict[str, Any],
    errors: list[str],
) -> tuple[bool, float]:
    if not answer:
        details["correctness"] = "no answer"
        return False, 0.0
    if config.require_evidence and inp.searches <= 0:
        details["correctness"] = "answered without searching; this reward requires evidence"
        return False, 0.0
    try:
        verdict = judge.judge(inp.question, inp.ground_truth, answer)
    except JudgeError as error:
        errors.append(f"judge: {error}")
        details["correctness"] = "judge failed"
        details["judge_failed"] = True
        return False, 0.0
    details["judge"] = {
        "correct": verdict.correct,
        "score": verdict.score,
        "reason": verdict.reason,
        "prompt_id": verdict.prompt_id,
    }
    return verdict.correct, verdict.score if verdict.correct else 0.0


def _conciseness(
    inp: RewardInput, answer: str, config: RewardConfig, details: dict[str, Any]
) -> float:
    if not answer:
        return 0.0
    truth_words = max(len(text.words(inp.ground_truth)), 1)
    answer_words = len(text.words(text.strip_decorations(answer)))
    allowance = max(config.length_ratio * truth_words, truth_words + config.length_slack)
    length_score = 1.0 if answer_words <= allowance else allowance / answer_words
    padding = sorted(text.decorations(answer) - text.decorations(inp.ground_truth))
    score = max(0.0, length_score - config.decoration_penalty * len(padding))
    details["conciseness_raw"] = round(score, 4)
    details["answer_words"] = answer_words
    if padding:
        details["padding"] = padding
    return score


def _golden_recall(inp: RewardInput, details: dict[str, Any]) -> float:
    golden = set(inp.golden_chunk_ids)
    if not golden:
        details["golden_recall"] = "the question has no golden chunks"
        return 0.0
    found = golden & set(inp.retrieved_chunk_ids)
    details["golden_found"] = sorted(found)
    return len(found) / len(golden)


def _format(inp: RewardInput, answer: str, config: RewardConfig, details: dict[str, Any]) -> float:
    if inp.finish_reason != "answer" or not answer:
        details["format"] = f"finished with {inp.finish_reason!r}" + (
            "" if answer else ", no answer"
        )
        return 0.0
    faults = inp.malformed_calls + len(_STRAY_TAG.findall(answer))
    if faults:
        details["format"] = f"{faults} malformed tool call(s) or stray tag(s)"
    return max(0.0, 1.0 - config.malformed_penalty * faults)


def _calibration(inp: RewardInput, correct: bool, details: dict[str, Any]) -> float:
    if inp.confidence is None:
        details["calibration"] = "no confidence stated"
        return 0.0
    confidence = min(max(float(inp.confidence), 0.0), 1.0)
    return 1.0 - (confidence - (1.0 if correct else 0.0)) ** 2


def _novelty(inp: RewardInput, answer: str, correct: bool, details: dict[str, Any]) -> float:
    if not answer:
        return 0.0
    if correct:
        return 1.0
    if restates_question(inp.question, answer):
        details["novelty"] = "a wrong answer made only of the question's words"
        return 0.0
    return 1.0


def restates_question(question: str, answer: str) -> bool:
    """Whether every content word of `answer` (numbers included) is one of `question`'s: the
    answer says nothing the question did not ("Failing assertion" for "What exception does a
    failing assert statement raise?"). An answer with no content word ("Yes") is not one."""
    said = text.content_terms(answer, keep_numbers=True)
    return bool(said) and said <= text.content_terms(question, keep_numbers=True)
