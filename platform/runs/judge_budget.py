"""A monthly budget of calls to the operator's judges, per account (issue 68.6).

The operator's judges (`SLEUTH_JUDGES`, chosen by name) answer on the operator's paid key, so
each account may ask them `SLEUTH_JUDGE_CALLS_PER_MONTH` verdicts a calendar month (UTC). A
customer's own endpoint with their own key, and the built-in offline judge, cost the operator
nothing and are not counted.

Where it counts: `runs.services.judge_build` gives the operator's judge a meter
(`judge_call_take`), which the engine's `OpenAIJudge` calls before each verdict it asks of
the endpoint — not for a verdict it had cached, not again for a retry of the same verdict.
Runs (training, validation, the final evaluation) and reward previews all build their judge
there, so every paid call passes one count.

Where the count lives: Redis (Django's cache), one integer per account and month. A run asks
up to tens of thousands of verdicts from 8 threads at once, on several workers; Redis's INCR
is atomic across all of them, with no database connection per judge thread. Counts outlive
workers (production's Redis keeps an append-only file: docker/compose.yml); emptying the
cache's Redis would give every account its month again, which costs the operator, never the
customer. With Redis unreachable a call is let through and logged, as the rate limits do: a
blip must not fail a run hours into training, and nothing new can be queued meanwhile.

What happens when it is spent:
- a run is refused when it is started if its worst case (`run_worst_case_calls`) does not fit
  in what is left this month. Only the run itself is weighed: calls other runs of the account
  will still make are not reserved, so two runs started together may each fit and together
  not; the count stops whichever reaches the end first;
- a run that reaches the end of the budget mid-run fails with the reason (its checkpoints are
  kept). It does not fall back to the offline judge: the reward would change mid-run, and the
  curves, the model and its evaluation would mix two judges with no mark of where;
- a reward preview is refused before it is queued when its answers do not fit, and one that
  runs out on the worker says so instead of its scores.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from django.conf import settings
from django.core.cache import cache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

# A month's count is kept this long after its first call (then the next month's key counts).
KEY_SECONDS = 40 * 24 * 3600
# Questions a run generates when it starts without a question set (pipeline's
# question_set_generate, n=100): its validation questions are at most these.
GENERATED_QUESTIONS = 100
# The final evaluation judges the trained agent and up to three baselines (base, echo@k,
# echo), and again for the intervals (a verdict may be cached, or asked again with another
# prompt): at most this many verdicts per validation question.
FINAL_EVAL_VERDICTS_PER_QUESTION = 8
# A run with a cold start has it judged too, twice, and both again for RL's share.
COLD_START_VERDICTS_PER_QUESTION = 4


class JudgeBudgetSpent(Exception):
    """The account's calls to the operator's judges for this month are spent; the message is
    for the customer."""


@dataclass(frozen=True)
class JudgeUsage:
    used: int
    limit: int
    month: str  # "June 2026"
    resets: str  # "1 July 2026"

    @property
    def left(self) -> int:
        return max(self.limit - self.used, 0)

    @property
    def summary(self) -> str:
        """What the customer reads: "3 of 50,000 calls to Sleuth's judges used in June 2026
        (49,997 left; they come back on 1 July 2026)"."""
        return (
            f"{self.used:,} of {self.limit:,} calls to Sleuth's judges used in {self.month} "
            f"({self.left:,} left; they come back on {self.resets})"
        )


def _now() -> datetime:
    return datetime.now(UTC)


def _month(now: datetime) -> str:
    return f"{now.year:04d}-{now.month:02d}"


def _next_month(now: datetime) -> datetime:
    return datetime(now.year + now.month // 12, now.month % 12 + 1, 1, tzinfo=UTC)


def _key(account_id: int, now: datetime) -> str:
    return f"judge-calls:{account_id}:{_month(now)}"


def seconds_to_reset() -> int:
    """Seconds until the month's calls come back (a refusal's Retry-After)."""
    now = _now()
    return max(int((_next_month(now) - now).total_seconds()), 1)


def judge_calls_limit() -> int:
    return settings.SLEUTH_JUDGE_CALLS_PER_MONTH


def judge_usage(user) -> JudgeUsage:
    """The account's calls to the operator's judges this month, and its limit."""
    return _usage(user.pk, _now())


def _usage(account_id: int, now: datetime) -> JudgeUsage:
    try:
        used = int(cache.get(_key(account_id, now)) or 0)
    except RedisError:
        logger.error("judge budget of account %s not read: the cache is unreachable", account_id)
        used = 0
    return JudgeUsage(
        used=used,
        limit=judge_calls_limit(),
        month=now.strftime("%B %Y"),
        resets=f"1 {_next_month(now).strftime('%B %Y')}",
    )


def spent_message(usage: JudgeUsage) -> str:
    return (
        f"This account has used its {usage.limit:,} calls to the platform's judges for "
        f"{usage.month} ({usage.used:,} of {usage.limit:,}); they come back on {usage.resets} "
        "(UTC). Until then use your own judge endpoint (the project's judge page) or the "
        "built-in offline judge."
    )


def judge_call_take(account_id: int) -> None:
    """Count one call to an operator's judge for the account, or raise JudgeBudgetSpent when
    the month's calls are spent (the call is then not counted). Atomic across processes:
    INCR first, and a count past the limit is given back, so that racing callers never pass
    the limit together."""
    now = _now()
    key = _key(account_id, now)
    limit = judge_calls_limit()
    try:
        cache.add(key, 0, timeout=KEY_SECONDS)  # sets the expiry once, on the month's first
        try:
            calls = cache.incr(key)
        except ValueError:  # expired between add() and incr()
            cache.add(key, 0, timeout=KEY_SECONDS)
            calls = cache.incr(key)
        if calls > limit:
            cache.decr(key)
    except RedisError:
        logger.error("judge call of account %s not counted: the cache is unreachable", account_id)
        return
    if calls > limit:
        raise JudgeBudgetSpent(spent_message(_usage(account_id, now)))


def judge_meter(account_id: int):
    """The meter an operator's judge calls before each verdict (engine.rewards.judge)."""
    return lambda: judge_call_take(account_id)


def counted(reward) -> bool:
    """Whether a reward config's judge is one of the operator's (counted against the budget)."""
    return bool(reward.judge is not None and reward.judge.name)


def run_worst_case_calls(config, questions: int) -> int:
    """The most verdicts a run with TrainConfig `config` may ask, `questions` bounding its
    validation questions (its question set's size: the validation split is a part of it).
    Training: every rollout of every step and refill round; validation every `eval_every`
    steps and at the last, `eval_samples` each; the final evaluation's policies twice."""
    rollouts = (
        config.steps * config.questions_per_step * config.group_size * (1 + config.refill_rounds)
    )
    validations = -(-config.steps // config.eval_every) if config.eval_every else 0
    final = min(questions, config.final_eval_sample) if config.final_eval_sample else questions
    return (
        rollouts
        + validations * questions * config.eval_samples
        + final * FINAL_EVAL_VERDICTS_PER_QUESTION
        + (final * COLD_START_VERDICTS_PER_QUESTION if config.evaluates_cold_start else 0)
    )


def run_budget_check(*, config, questions: int, user) -> None:
    """Refuse (JudgeBudgetSpent) a run on an operator's judge whose worst case does not fit in
    what the account has left this month."""
    if not counted(config.reward):
        return
    worst = run_worst_case_calls(config, questions)
    usage = judge_usage(user)
    if worst > usage.left:
        raise JudgeBudgetSpent(
            f"This run may ask the platform's judge up to {worst:,} calls; your account has "
            f"{usage.left:,} left for {usage.month} ({usage.used:,} of {usage.limit:,} used, "
            f"back on {usage.resets}). Make it smaller (fewer steps, questions per step or "
            "rollouts per question, a smaller final evaluation sample), or use your own "
            "judge endpoint or the built-in offline judge."
        )


def preview_budget_check(*, reward, calls: int, user) -> None:
    """Refuse (JudgeBudgetSpent) a preview on an operator's judge whose `calls` answers do not
    fit in what the account has left this month."""
    if not counted(reward):
        return
    usage = judge_usage(user)
    if calls > usage.left:
        raise JudgeBudgetSpent(
            f"This preview needs {calls} call{'s' if calls != 1 else ''} to the platform's "
            "judge; your account "
            f"has used {usage.used:,} of {usage.limit:,} judge calls for {usage.month} "
            f"({usage.left:,} left, back on {usage.resets}). Preview with your own judge "
            "endpoint or the built-in offline judge."
        )
