"""Writes for runs: create, cancel, and every status change with its RunEvent.

Web requests call `run_create` and `run_cancel`; the Celery tasks (platform/config/tasks.py) call
the stage services in `runs.pipeline`. Work is queued with `transaction.on_commit`, so a
worker never looks for a run that is not committed yet.
"""

import logging
import os
import secrets
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from urllib.parse import urlsplit

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import leases
from core.local_copies import purge_everywhere
from core.queues import enqueue
from core.s3 import delete_s3_prefix
from corpora.models import Document, Project, QuestionSet
from engine.net import UnsafeURL, check_url, public_http_client
from engine.rewards.judge import Judge, OfflineJudge, build_judge
from engine.rewards.reward import RewardConfig, RewardInput, compute_rewards

from . import artifacts, judge_budget
from .lease import pickup_deadline
from .models import Checkpoint, Run, RunEvent
from .notifications import run_end_notify_later
from .presets import DEFAULT_PRESET, PRESETS, preset_config, preset_needs

logger = logging.getLogger(__name__)


class RunRejected(ValueError):
    """A run that cannot start; the message says what is missing and what to do."""


# The names of the default model (SmolLM2-135M from its wheel): engine.agent.models.
_DEFAULT_MODEL_NAMES = frozenset({"", "default", "base", "smollm2-135m-instruct"})


def model_key(name: str | None) -> str:
    """A model name as the allowlist spells it ("default" for every name of the default)."""
    name = (name or "").strip()
    return "default" if name in _DEFAULT_MODEL_NAMES else name


def allowed_models() -> list[str]:
    """The models a run may train: the operator's SLEUTH_ALLOWED_MODELS, or else the ones the
    presets name. Anything else (a path, any hub id) would load on shared workers."""
    names = settings.SLEUTH_ALLOWED_MODELS
    if names is None:
        names = [preset["config"].get("model", "default") for preset in PRESETS.values()]
    return list(dict.fromkeys(model_key(name) for name in names))


def model_allowed(name: str | None) -> bool:
    """Whether the operator offers this model (checked wherever a model is about to load)."""
    return model_key(name) in allowed_models()


def enqueue_or_leave_to_sweep(task: str, *args) -> bool:
    """Send a task by name (core.queues); with the broker unreachable, log it and return False:
    the row carries a pick-up deadline, past which the sweep (runs.sweep.runs_sweep) queues it."""
    try:
        enqueue(task, args=args)
    except Exception:
        logger.warning("could not queue %s%s; the sweep will", task, args, exc_info=True)
        return False
    return True


def run_event_add(
    *, run: Run, message: str, kind: str = RunEvent.Kind.INFO, status: str = ""
) -> RunEvent:
    return RunEvent.objects.create(run=run, kind=kind, status=status, message=message)


QUOTA_WINDOW = timedelta(days=30)


@dataclass(frozen=True)
class AccountUsage:
    """What an account may still start: active runs and worker-minutes over QUOTA_WINDOW."""

    active_runs: int
    max_active_runs: int
    minutes_used: int
    minutes_quota: int

    @property
    def minutes_left(self) -> int:
        return max(self.minutes_quota - self.minutes_used, 0)


def _run_minutes(run: Run) -> float:
    """Worker-minutes a run counts: its whole cap while active (it may still use it), the
    minutes it ran once finished (at most its cap)."""
    cap = run.config.get("max_minutes") or settings.SLEUTH_MAX_RUN_MINUTES
    if run.status in Run.ACTIVE:
        return cap
    if run.started_at and run.finished_at:
        return min((run.finished_at - run.started_at).total_seconds() / 60, cap)
    return 0.0


def account_usage(user) -> AccountUsage:
    since = timezone.now() - QUOTA_WINDOW
    runs = list(
        Run.objects.filter(
            Q(status__in=Run.ACTIVE) | Q(created_at__gte=since), created_by=user
        ).only("status", "config", "started_at", "finished_at")
    )
    return AccountUsage(
        active_runs=sum(r.status in Run.ACTIVE for r in runs),
        max_active_runs=settings.SLEUTH_MAX_ACTIVE_RUNS,
        minutes_used=round(sum(_run_minutes(r) for r in runs)),
        minutes_quota=settings.SLEUTH_WORKER_MINUTES,
    )


def _check_limits(config, user) -> None:
    """Refuse a run over the per-run caps or the account's limits. Called with the user's row
    locked, so two runs started at once cannot both take the last slot."""
    if not config.max_minutes or config.max_minutes > settings.SLEUTH_MAX_RUN_MINUTES:
        raise RunRejected(
            f"A run may take at most {settings.SLEUTH_MAX_RUN_MINUTES} minutes; "
            "set a time limit within it."
        )
    if config.steps > settings.SLEUTH_MAX_RUN_STEPS:
        raise RunRejected(f"A run may have at most {settings.SLEUTH_MAX_RUN_STEPS} steps.")
    usage = account_usage(user)
    if usage.active_runs >= usage.max_active_runs:
        raise RunRejected(
            f"You have {usage.active_runs} runs queued or running, the most an account may "
            "have at once. Start this one when one of them ends, or cancel one."
        )
    if config.max_minutes > usage.minutes_left:
        raise RunRejected(
            f"This run may use up to {config.max_minutes:g} worker-minutes; you have "
            f"{usage.minutes_left} left of {usage.minutes_quota} over 30 days."
        )


def run_create(
    *,
    project: Project,
    user,
    name: str,
    question_set: QuestionSet | None,
    preset: str = DEFAULT_PRESET,
    options: dict | None = None,
) -> Run:
    """Check that the project can train a run, record it as queued, and queue its preparation.

    `options` are TrainConfig overrides on top of the preset (e.g. {"steps": 8}).
    `question_set=None` means questions are generated from the documents.
    """
    if project.owner_id != user.pk:
        raise RunRejected("This project is not yours.")
    if preset not in PRESETS:
        raise RunRejected(f"Unknown preset {preset!r}: choose one of {', '.join(PRESETS)}.")
    needs = preset_needs(preset)
    if "ranks" in (options or {}) and options["ranks"] != needs.ranks:
        raise RunRejected(
            f"The {preset} preset trains in {needs.ranks} process(es), one a device it needs "
            f"({needs.describe()}); choose a preset that needs more devices."
        )
    try:
        config = preset_config(preset, {**(options or {}), "ranks": needs.ranks})
    except ValueError as error:
        raise RunRejected(str(error)) from None
    if config.steps < 1:
        raise RunRejected("A run needs at least one training step.")
    if not model_allowed(config.model):
        raise RunRejected(
            f"The model {config.model[:100]!r} is not offered here; choose one of "
            f"{', '.join(allowed_models())}."
        )
    try:
        judge_build(reward=config.reward, project=project)  # refused now, not mid-run
    except JudgeRejected as error:
        raise RunRejected(str(error)) from None
    readable = project.documents.filter(
        status__in=[Document.Status.PARSED, Document.Status.INDEXED]
    )
    if not readable.exists():
        if project.documents.filter(status=Document.Status.UPLOADED).exists():
            raise RunRejected(
                "Your documents are still being read. Start the run once at least one is parsed."
            )
        raise RunRejected("Upload at least one document that can be read before starting a run.")
    if question_set is not None:
        if question_set.project_id != project.pk:
            raise RunRejected("That question set belongs to another project.")
        if question_set.needs_review:
            raise RunRejected(
                f"{question_set.name} is a draft of generated questions: review it on its page "
                "(edit or delete lines, then Accept all) before a run uses it."
            )
        answered = question_set.questions.exclude(answer="").count()
        if answered < 2:
            raise RunRejected(
                f"{question_set.name} has {answered} question(s) with an answer; a run needs "
                "at least two (some to train on, some held back to validate). Add questions "
                "with answers, or let the run generate questions from your documents."
            )
    if question_set is not None:
        questions = question_set.questions.exclude(answer="").count()
    else:
        questions = judge_budget.GENERATED_QUESTIONS
    try:
        judge_budget.run_budget_check(config=config, questions=questions, user=user)
    except judge_budget.JudgeBudgetSpent as error:
        raise RunRejected(str(error)) from None
    name = name.strip() or f"{PRESETS[preset]['label']} run"
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        _check_limits(config, user)
        run = Run.objects.create(
            project=project,
            created_by=user,
            name=name[:120],
            preset=preset,
            question_set=question_set,
            config=config.to_dict(),
            needs=needs.to_dict(),  # routes its training (runs.routing)
            total_steps=config.steps,
        )
        run.artifacts_prefix = f"projects/{project.pk}/runs/{run.pk}"
        run.lease_expires_at = pickup_deadline()  # on the database's clock
        run.save(update_fields=["artifacts_prefix", "lease_expires_at"])
        run.refresh_from_db(fields=["lease_expires_at"])
        run_event_add(
            run=run,
            kind=RunEvent.Kind.STATUS,
            status=Run.Status.QUEUED,
            message=f"Queued ({PRESETS[preset]['label']}, {config.steps} steps).",
        )
    transaction.on_commit(lambda: enqueue_or_leave_to_sweep("config.tasks.run_prepare", run.pk))
    return run


def run_cancel(*, run: Run, user) -> Run:
    """Ask a run to stop. A queued run stops at once; a working one stops within one step
    (the worker checks `cancel_requested` after every step and at every stage)."""
    if run.project.owner_id != user.pk:
        raise RunRejected("This run is not yours.")
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        if not run.is_active or run.cancel_requested:
            return run
        run.cancel_requested = True
        run.save(update_fields=["cancel_requested"])
        run_event_add(run=run, message="Cancel requested.")
        if not run.lease_owner:  # no worker holds it: it stops now
            run_finish(run=run, status=Run.Status.CANCELLED, reason="Cancelled.")
    return run


def run_delete(*, run: Run, user) -> None:
    """Delete a finished run with everything it made: checkpoints, the final model, its
    prepared questions and published archive on S3, then its rows (events, metrics,
    trajectories). An active run is refused: a worker may still write to it."""
    if run.project.owner_id != user.pk:
        raise RunRejected("This run is not yours.")
    with transaction.atomic():
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        run = Run.objects.select_for_update().get(pk=run.pk)
        if run.is_active:
            raise RunRejected(
                f"{run.name} is still {run.status}. Cancel it, and delete it once it has stopped."
            )
        run_delete_objects(run=run)


def run_delete_objects(*, run: Run) -> None:
    """Everything under the run's own prefix on S3, then its row (the caller checked that no
    worker holds it). The prefix is rebuilt from the ids, never read from an editable field."""

    prefix = f"{artifacts.run_prefix(run)}/"
    delete_s3_prefix(artifacts.bucket(), prefix)
    run.delete()
    transaction.on_commit(lambda: purge_everywhere(prefix))  # its copies on every disk


def run_set_status(*, run: Run, status: str, reason: str = "", **fields) -> Run:
    """Move a run to a new status and record the change (with its reason) as an event."""
    run.status, run.status_reason = status, reason
    for key, value in fields.items():
        setattr(run, key, value)
    run.save(update_fields=["status", "status_reason", *fields])
    message = reason or f"{status.capitalize()}."
    kind = RunEvent.Kind.ERROR if status == Run.Status.FAILED else RunEvent.Kind.STATUS
    run_event_add(run=run, kind=kind, status=status, message=message)
    return run


def run_finish(*, run: Run, status: str, reason: str = "") -> Run:
    """End a run (succeeded, failed or cancelled) and release its lease; its owner is mailed
    once this commits (runs.notifications)."""
    run = run_set_status(
        run=run,
        status=status,
        reason=reason,
        finished_at=timezone.now(),
        lease_owner="",
        lease_expires_at=None,
    )
    run_end_notify_later(run)
    return run


# -- answer judges ----------------------------------------------------------------------
#
# A judge is either one the operator defined (settings.SLEUTH_JUDGES, chosen by name: its
# URL is trusted and gets the operator's key) or the project's own endpoint (a URL the
# customer typed: public https only, checked at every connect, and only the customer's own
# key, saved for that very URL). No platform credential ever goes to a customer's URL.

OWN_JUDGE = "own"  # the choice meaning "the project's own endpoint"


class JudgeRejected(ValueError):
    """A judge that cannot be set or used; the message is written for the customer and
    names no host, address or upstream error."""


def judge_choices(project: Project) -> list[tuple[str, str]]:
    """(value, label) for the judge picker: offline, the operator's judges, the project's."""
    choices = [("", "Built-in offline judge (no model, no network)")]
    choices += [(name, name) for name in settings.SLEUTH_JUDGES if name != OWN_JUDGE]
    if project.judge_base_url:
        host = urlsplit(project.judge_base_url).hostname
        choices.append((OWN_JUDGE, f"Your endpoint: {project.judge_model} at {host}"))
    return choices


def judge_config_for(*, choice: str, project: Project) -> dict | None:
    """The `reward.judge` part of a run's config for a picker value: only a name for the
    operator's judges, the URL and model (never the key) for the project's own."""
    if not choice:
        return None
    if choice == OWN_JUDGE:
        return {"base_url": project.judge_base_url, "model": project.judge_model}
    return {"name": choice}


def project_judge_set(*, project: Project, user, base_url: str, model: str, api_key: str = ""):
    """Save the project's own judge endpoint. A key is kept only for the URL it was given
    with: a new URL without a new key drops the old key."""
    if project.owner_id != user.pk:
        raise JudgeRejected("This project is not yours.")
    _check_customer_url(project, base_url)
    if api_key or base_url != project.judge_base_url:
        project.set_judge_api_key(api_key)
    project.judge_base_url, project.judge_model = base_url, model
    project.save(update_fields=["judge_base_url", "judge_model", "judge_api_key_encrypted"])
    return project


def project_judge_clear(*, project: Project, user) -> Project:
    if project.owner_id != user.pk:
        raise JudgeRejected("This project is not yours.")
    project.judge_base_url = project.judge_model = ""
    project.set_judge_api_key("")
    project.save(update_fields=["judge_base_url", "judge_model", "judge_api_key_encrypted"])
    return project


def _check_customer_url(project: Project, url: str) -> None:
    """Refuse a customer's URL that is not public https; the reason is logged, not shown."""
    try:
        check_url(url, allow_private=settings.SLEUTH_JUDGE_ALLOW_PRIVATE_URLS)
    except UnsafeURL as error:
        logger.info("project %s: judge URL refused: %s", project.pk, error.detail)
        raise JudgeRejected(str(error)) from None


def judge_build(*, reward: RewardConfig, project: Project) -> Judge:
    """The judge for a reward config (a run's or a preview's), with the right key and the
    right HTTP client. Used by the web process (preview) and the workers (runs)."""
    config = reward.judge
    if config is None:
        return OfflineJudge()
    if config.name:
        operator = settings.SLEUTH_JUDGES.get(config.name)
        if not isinstance(operator, dict) or not operator.get("base_url"):
            raise JudgeRejected(f"The judge {config.name!r} is not offered any more.")
        resolved = replace(config, base_url=operator["base_url"], model=operator.get("model", ""))
        return build_judge(
            resolved,
            api_key=os.environ.get(operator.get("api_key_env", ""), ""),
            # Paid on the operator's key: each verdict counts against the project owner's
            # month (runs.judge_budget).
            meter=judge_budget.judge_meter(project.owner_id),
        )
    if not config.base_url or config.base_url != project.judge_base_url:
        raise JudgeRejected(
            "This judge endpoint is not your project's any more; set it again or pick another."
        )
    _check_customer_url(project, config.base_url)
    try:
        api_key = project.judge_api_key()
    except InvalidToken:
        raise JudgeRejected("Your judge key could not be read; save it again.") from None
    client = public_http_client(
        timeout=config.timeout, allow_private=settings.SLEUTH_JUDGE_ALLOW_PRIVATE_URLS
    )
    return build_judge(config, api_key=api_key, http_client=client)


# --- reward preview: a Celery task with a deadline, polled by the page ------------------
#
# The web request only checks the form and queues; a worker builds the judge and scores.
# The request and its outcome live in the cache (Redis) under an unguessable id, with the
# owner and project, for PREVIEW_TTL_SECONDS: a preview is worth nothing after that.

# What a customer reads when the judge failed: the upstream error (its body, the host, the
# exception) goes to the log only, since it may come from a server the customer aimed at.
JUDGE_FAILED = "The judge could not be reached or gave no usable verdict; correctness counts 0."
PREVIEW_TTL_SECONDS = 600
# A worker must start a preview this long after it was queued, or the page gives up.
PREVIEW_PICKUP_SECONDS = 30
# What a preview refused for the account's previews in flight is told to wait.
PREVIEW_RETRY_SECONDS = 5
# A preview's status once it is over: its place among the account's previews is given back.
PREVIEW_ENDED = ("done", "failed", "timed_out")


class PreviewsInFlight(Exception):
    """The account has SLEUTH_PREVIEWS_IN_FLIGHT_PER_ACCOUNT previews queued or scoring."""

    def __init__(self, in_flight: int, cap: int):
        super().__init__(
            f"Your account has {in_flight} reward previews being scored, the most it may have "
            f"at once ({cap}). Wait for one to finish, then try again."
        )
        self.retry_after = PREVIEW_RETRY_SECONDS


def preview_deadline() -> float:
    """Seconds a preview may take on the worker in all (every judge call together)."""
    return settings.SLEUTH_PREVIEW_SECONDS


def _preview_key(preview_id: str) -> str:
    return f"reward-preview:{preview_id}"


def reward_preview_queue(
    *,
    project: Project,
    user,
    reward: RewardConfig,
    question: str,
    ground_truth: str,
    answers: list[str],
    searched: bool,
    found_golden: bool,
) -> str:
    """Record a preview and queue its task; returns the id its page polls. Never waits on a
    judge: the judge is built and asked by the worker. JudgeBudgetSpent when its answers do
    not fit in what the account has left of the operator's judges this month;
    PreviewsInFlight when the account has its most previews queued or scoring (its previews
    share the workers' queue with everyone's parsing: a burst of them, within the rate
    limit, would otherwise all wait there ahead of other accounts' work)."""
    judge_budget.preview_budget_check(reward=reward, calls=len(answers), user=user)
    # Held until the preview ends (PREVIEW_ENDED), or runs out after the longest a preview
    # can last: its pick-up time, its deadline and a margin.
    try:
        lease = leases.take(
            [
                (
                    leases.key(f"previews:account:{user.pk}"),
                    settings.SLEUTH_PREVIEWS_IN_FLIGHT_PER_ACCOUNT,
                )
            ],
            PREVIEW_PICKUP_SECONDS + preview_deadline() + 30,
        )
    except leases.Full as full:
        raise PreviewsInFlight(full.in_flight, full.cap) from None
    if lease is None:
        logger.error("reward previews in flight not counted: the cache is unreachable")
    preview_id = secrets.token_urlsafe(18)
    entry = {
        "project_id": project.pk,
        "user_id": user.pk,
        "queued_at": time.time(),
        "status": "queued",
        "reward": reward.to_dict(),
        "question": question,
        "ground_truth": ground_truth,
        "answers": answers,
        "searched": searched,
        "found_golden": found_golden,
        "lease": (lease.keys, lease.member) if lease else None,  # the cache pickles it
    }
    cache.set(_preview_key(preview_id), entry, PREVIEW_TTL_SECONDS)
    try:
        # On the preview queue: short jobs on the CPU workers unless the operator says.
        enqueue(
            "config.tasks.reward_preview",
            args=[preview_id],
            expires=PREVIEW_PICKUP_SECONDS,  # a worker that gets it later drops it
        )
    except Exception:
        logger.warning("could not queue reward preview %s", preview_id, exc_info=True)
        _preview_update(
            preview_id, status="failed", error="Previews cannot start right now; try again soon."
        )
    return preview_id


def _preview_update(preview_id: str, **fields) -> dict | None:
    entry = cache.get(_preview_key(preview_id))
    if entry is None:
        return None  # expired: its lease has run out too
    entry.update(fields)
    if entry["status"] in PREVIEW_ENDED and entry.get("lease"):
        leases.Lease(*entry.pop("lease")).release()
    cache.set(_preview_key(preview_id), entry, PREVIEW_TTL_SECONDS)
    return entry


def _preview_claim(preview_id: str, by: str) -> bool:
    """Exactly one of the worker (to score) or the page (to give up) wins a preview."""
    return cache.add(f"{_preview_key(preview_id)}:claim", by, PREVIEW_TTL_SECONDS)


def reward_preview_get(*, preview_id: str, user, project: Project) -> dict | None:
    """The preview's state for its owner and project (None for anyone else or once it has
    expired). A preview still waiting past its pick-up time and deadline is given up."""
    entry = cache.get(_preview_key(preview_id))
    if entry is None or entry["user_id"] != user.pk or entry["project_id"] != project.pk:
        return None
    waited = time.time() - entry["queued_at"]
    if entry["status"] in ("queued", "running"):
        if entry["status"] == "queued" and waited > PREVIEW_PICKUP_SECONDS:
            if _preview_claim(preview_id, "page"):
                return _preview_update(preview_id, status="timed_out")
        if waited > PREVIEW_PICKUP_SECONDS + preview_deadline() + 5:
            return _preview_update(preview_id, status="timed_out")
    return entry


def reward_preview_run(*, preview_id: str) -> str | None:
    """The preview task's work: score each sample answer with the reward the run would use,
    the judge's calls together within `preview_deadline()` (each call gets a share of it and
    at most one retry; the answers are judged at once). Returns the preview's status."""
    if not _preview_claim(preview_id, "worker"):
        return None  # the page gave up on it already
    entry = _preview_update(preview_id, status="running")
    if entry is None:
        return None  # expired
    deadline = preview_deadline()
    try:
        project = Project.objects.get(pk=entry["project_id"], owner_id=entry["user_id"])
        config = RewardConfig.from_dict(entry["reward"])
        if config.judge is not None:
            retries = min(config.judge.retries, 1)
            judge_config = replace(
                config.judge,
                timeout=min(config.judge.timeout, deadline / (retries + 1)),
                retries=retries,
                concurrency=len(entry["answers"]),
            )
            config = replace(config, judge=judge_config)
        judge = judge_build(reward=config, project=project)
    except (Project.DoesNotExist, ValueError) as error:  # JudgeRejected is one: customer text
        message = str(error) if isinstance(error, JudgeRejected) else "This preview cannot run."
        _preview_update(preview_id, status="failed", error=message)
        return "failed"
    searched = entry["searched"]
    inputs = [
        RewardInput(
            question=entry["question"],
            ground_truth=entry["ground_truth"],
            answer=answer,
            retrieved_chunk_ids=["golden"] if searched and entry["found_golden"] else [],
            golden_chunk_ids=["golden"],
            searches=1 if searched else 0,
            finish_reason="answer",
        )
        for answer in entry["answers"]
    ]
    try:
        rewards = compute_rewards(inputs, config, judge)
    except judge_budget.JudgeBudgetSpent as error:  # another run or preview spent it meanwhile
        _preview_update(preview_id, status="failed", error=str(error))
        return "failed"
    rows = []
    for answer, reward in zip(entry["answers"], rewards, strict=True):
        error = ""
        if reward.errors:
            logger.warning("project %s: reward preview judge failed: %s", project.pk, reward.errors)
            timed_out = any("Timeout" in e or "timed out" in e for e in reward.errors)
            error = (
                f"The judge did not answer within the preview's {deadline:g} seconds; "
                "correctness counts 0."
                if timed_out
                else JUDGE_FAILED
            )
        judged = reward.details.get("judge")
        rows.append(
            {
                "answer": answer,
                "total": reward.total,
                "components": reward.components,
                "why": judged["reason"] if judged else reward.details.get("correctness", ""),
                "padding": reward.details.get("padding", []),
                "error": error,
            }
        )
    judge_config = config.judge
    _preview_update(
        preview_id,
        status="done",
        rows=rows,
        components=[
            (name, name.replace("_", " ").capitalize(), weight)
            for name, weight in config.weights.items()
            if name in config.components
        ],
        judged_by=(
            judge_config.name
            if judge_config and judge_config.name
            else f"{judge_config.model} at {judge_config.base_url}"
            if judge_config
            else "the built-in offline judge"
        ),
    )
    return "done"


def checkpoints_prune(*, run: Run, keep_last: int) -> list[int]:
    """Delete a run's checkpoints (rows and S3 folders) but the last `keep_last`, the best
    by validation (accuracy, then golden recall), the final and any published one, so a
    long run does not fill the store. 0 keeps every one. Returns the steps deleted."""
    if keep_last <= 0:
        return []
    checkpoints = list(run.checkpoints.order_by("step"))
    keep = {c.pk for c in checkpoints[-keep_last:]}
    keep |= {c.pk for c in checkpoints if c.is_final or c.published_prefix}
    scored = [c for c in checkpoints if c.metrics]
    if scored:
        best = max(
            scored,
            key=lambda c: (
                # Checkpoints validated before accuracy was kept ranked by the answer score.
                c.metrics.get("val/accuracy", c.metrics.get("val/answer_score", 0.0)),
                c.metrics.get("val/golden_recall", 0.0),
                c.step,
            ),
        )
        keep.add(best.pk)
    deleted = []
    for checkpoint in checkpoints:
        if checkpoint.pk in keep:
            continue
        # The row goes first: a reader never follows it to a half-deleted folder.
        Checkpoint.objects.filter(pk=checkpoint.pk).delete()
        artifacts.delete_folder(checkpoint.s3_prefix)
        deleted.append(checkpoint.step)
    return deleted
