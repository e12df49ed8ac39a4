"""Per-policy metrics over the trajectories of a set of questions.

- accuracy: share of trajectories whose answer the judge finds correct (no answer, and an
  answer the judge could not score, count as not correct). The reported answer accuracy.
- answer_score: mean judge score over all trajectories (no answer scores 0): the reward's
  partial-credit shaping, which gives wrong answers some credit; reported apart from
  accuracy, never as it.
- golden_recall: per trajectory, the share of the question's golden chunks shown in any
  search result; mean over trajectories of questions that have golden chunks.
- pass@k: share of questions with at least one correct answer among their k samples.
- searches_per_question: valid searches per trajectory, mean.
- searches_after_miss: the same, over the trajectories whose first search showed none of
  the question's golden chunks: whether the agent searches again when it has not found it.
- retrieved_chunks: distinct chunks shown to the model per trajectory, mean.
- echo_rate: share of trajectories whose first search is the question itself.
- answer_tokens: tokens in the answer, mean over trajectories that answered.
- p50_s / p95_s: wall time per question (its slowest sample), from the start of the batch
  it ran in (`--batch-size` questions at once) to its end: latency under that load, not
  one question served alone.
- judge_errors: answers the judge could not score (counted as 0).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engine.agent.protocol import normalize_query
from engine.agent.trajectory import Trajectory
from engine.rewards.judge import JudgeError

METRIC_KEYS = (
    "accuracy",
    "answer_score",
    "golden_recall",
    "pass@k",
    "searches_per_question",
    "searches_after_miss",
    "retrieved_chunks",
    "echo_rate",
    "answer_tokens",
    "p50_s",
    "p95_s",
    "n",
    "judge_errors",
)


def behaviour(
    trajectories: Sequence[Trajectory], count_tokens: Callable[[str], int]
) -> dict[str, float]:
    """How the agent went about it, whatever it found: searches, chunks shown, query echo,
    answers and their length. Shared by evaluation and the trainer's logs."""
    answers = [t.answer for t in trajectories if t.answer]
    return {
        "searches_per_question": _mean([len(t.valid_searches) for t in trajectories]),
        "retrieved_chunks": _mean([len(t.retrieved_chunk_ids) for t in trajectories]),
        "echo_rate": _mean([_echoes(t) for t in trajectories]),
        "answered": _mean([t.finish_reason == "answer" for t in trajectories]),
        "answer_tokens": _mean([count_tokens(a) for a in answers]),
    }


def _echoes(t: Trajectory) -> bool:
    first = t.valid_searches[0].query if t.valid_searches else None
    return first is not None and normalize_query(first) == normalize_query(t.question)


def summarize(
    questions: Sequence[Any],
    samples: Sequence[Sequence[Trajectory]],
    judge: Any,
    count_tokens: Callable[[str], int],
) -> dict[str, float]:
    """Metrics for one policy; `samples[i]` holds the trajectories of `questions[i]`."""
    scores, rights, recalls, passed, times, after_miss = [], [], [], [], [], []
    judge_errors = 0
    for question, trajectories in zip(questions, samples, strict=True):
        golden = set(getattr(question, "golden_chunk_ids", None) or [])
        correct = False
        for t in trajectories:
            verdict = None
            if t.answer:
                try:
                    verdict = judge.judge(question.question, question.answer, t.answer)
                except JudgeError:
                    # Scored 0 and counted, as in training rewards: one unreachable judge
                    # must not throw away a whole evaluation.
                    judge_errors += 1
            scores.append(verdict.score if verdict else 0.0)
            rights.append(bool(verdict and verdict.correct))
            correct = correct or rights[-1]
            t.meta["judge_score"] = scores[-1]
            t.meta["judge_correct"] = rights[-1]
            if golden:
                recalls.append(len(golden & set(t.retrieved_chunk_ids)) / len(golden))
                searches = t.valid_searches
                if searches and not golden & set(searches[0].chunk_ids):
                    after_miss.append(len(searches))
        passed.append(correct)
        times.append(max((t.wall_s for t in trajectories), default=0.0))
    how = behaviour([t for trajectories in samples for t in trajectories], count_tokens)
    return {
        "accuracy": _mean(rights),
        "answer_score": _mean(scores),
        "golden_recall": _mean(recalls),
        "pass@k": _mean(passed),
        "searches_per_question": how["searches_per_question"],
        "searches_after_miss": _mean(after_miss),
        "retrieved_chunks": how["retrieved_chunks"],
        "echo_rate": how["echo_rate"],
        "answer_tokens": how["answer_tokens"],
        "p50_s": round(float(np.percentile(times, 50)), 3) if times else 0.0,
        "p95_s": round(float(np.percentile(times, 95)), 3) if times else 0.0,
        "n": len(questions),
        "judge_errors": judge_errors,
    }


def _mean(values: list) -> float:
    return round(float(np.mean(values)), 4) if values else 0.0
