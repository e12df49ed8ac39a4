"""Writes for runs: create, cancel, and every status change with its RunEvent.

Web requests call `run_create` and `run_cancel`; the Celery tasks (workers/tasks.py) call
the stage services in `runs.pipeline`. Work is queued with `transaction.on_commit`, so a
worker never looks for a run that is not committed yet.
"""

import logging
import os
from dataclasses import dataclass, replace
from datetime import timedelta
from urllib.parse import urlsplit

from cryptography.fernet import InvalidToken
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from corpora.models import Document, Project, QuestionSet
from workers.net import UnsafeURL, check_url, public_http_client
from workers.rewards.judge import Judge, OfflineJudge, build_judge
from workers.rewards.reward import RewardConfig

from . import artifacts
from .lease import pickup_deadline
from .models import Checkpoint, Run, RunEvent
from .presets import DEFAULT_PRESET, PRESETS, preset_config

logger = logging.getLogger(__name__)


def ingest_queue() -> str:
    """The CPU queue (preparing, publishing); the environment may rename it."""
    return os.environ.get("SLEUTH_INGEST_QUEUE", "ingest")


def train_queue() -> str:
    """The GPU queue (training, evaluating); a CPU worker serves it in development."""
    return os.environ.get("SLEUTH_TRAIN_QUEUE", "train")


class RunRejected(ValueError):
    """A run that cannot start; the message says what is missing and what to do."""


# The names of the default model (SmolLM2-135M from its wheel): workers.agent.models.
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


def enqueue(task: str, *args, queue: str | None = None) -> None:
    """Send a task by name (the web side never imports the task module)."""
    from config.celery import app

    app.send_task(task, args=list(args), queue=queue or ingest_queue())


def enqueue_or_leave_to_sweep(task: str, *args, queue: str | None = None) -> bool:
    """Send a task by name; with the broker unreachable, log it and return False: the row
    carries a pick-up deadline, past which the sweep (runs.pipeline.runs_sweep) queues it."""
    try:
        enqueue(task, *args, queue=queue)
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
    try:
        config = preset_config(preset, options or {})
    except ValueError as error:
        raise RunRejected(str(error)) from None
    if config.steps < 1:
        raise RunRejected("A run needs at least one training step.")
    if model_key(config.model) not in allowed_models():
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
        answered = question_set.questions.exclude(answer="").count()
        if answered < 2:
            raise RunRejected(
                f"{question_set.name} has {answered} question(s) with an answer; a run needs "
                "at least two (some to train on, some held back to validate). Add questions "
                "with answers, or let the run generate questions from your documents."
            )
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
    transaction.on_commit(lambda: enqueue_or_leave_to_sweep("workers.tasks.run_prepare", run.pk))
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
    from corpora.services import delete_s3_prefix

    delete_s3_prefix(artifacts.bucket(), f"{artifacts.run_prefix(run)}/")
    run.delete()


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
    """End a run (succeeded, failed or cancelled) and release its lease."""
    return run_set_status(
        run=run,
        status=status,
        reason=reason,
        finished_at=timezone.now(),
        lease_owner="",
        lease_expires_at=None,
    )


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
        return build_judge(resolved, api_key=os.environ.get(operator.get("api_key_env", ""), ""))
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


def checkpoints_prune(*, run: Run, keep_last: int) -> list[int]:
    """Delete a run's checkpoints (rows and S3 folders) but the last `keep_last`, the best
    by validation (answer score, then golden recall), the final and any published one, so a
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
                c.metrics.get("val/answer_score", 0.0),
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
