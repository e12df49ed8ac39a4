"""Reads for the run pages. Lookups by id are scoped to the owner and fail closed (404)."""

import logging

from django.conf import settings
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce, Now
from django.shortcuts import get_object_or_404

from core.s3 import presigned_download_url
from engine.evaluation.baselines import COLD_START

from . import artifacts
from .models import Checkpoint, Run, RunEvent, RunMetric, TrajectorySample

logger = logging.getLogger(__name__)


def runs_for_project(*, project) -> QuerySet[Run]:
    return Run.objects.filter(project=project)


def runs_for_user(*, user) -> QuerySet[Run]:
    return Run.objects.filter(project__owner=user).select_related("project")


def run_get_for_user(*, user, run_id: int) -> Run:
    """The run if `user` owns its project; Http404 otherwise (staff included)."""
    return get_object_or_404(
        Run.objects.select_related("project", "question_set"), pk=run_id, project__owner=user
    )


# A run past the queue: it holds (or held, between stages) a worker's time.
STARTED = [status for status in Run.ACTIVE if status != Run.Status.QUEUED]


def run_next_to_start(*, run_id: int) -> int:
    """The queued run a worker should start when it gets `run_id`'s start task, so that one
    customer's many queued runs cannot keep another's behind them all: among the queued
    runs no worker holds, the one whose owner has the fewest runs started (preparing,
    training, evaluating, publishing), oldest first. Every queued run has one start task,
    so each task starting the fairest run still starts every run once (a task whose own
    run was started by another's, or has ended since, starts the next fairest).

    `run_id` itself when it is a preparation to resume (its worker stopped), or when no
    queued run waits."""
    claimable = Q(lease_owner="") | Q(lease_expires_at__lt=Now())
    if Run.objects.filter(claimable, pk=run_id, status=Run.Status.PREPARING).exists():
        return run_id
    started = (
        Run.objects.filter(project__owner=OuterRef("project__owner"), status__in=STARTED)
        .order_by()
        .values("project__owner")
        .annotate(n=Count("pk"))
        .values("n")
    )
    fairest = (
        Run.objects.filter(claimable, status=Run.Status.QUEUED)
        .annotate(owner_started=Coalesce(Subquery(started, output_field=IntegerField()), 0))
        .order_by("owner_started", "created_at", "pk")
        .values_list("pk", flat=True)
        .first()
    )
    return fairest or run_id


def run_events(*, run: Run) -> QuerySet[RunEvent]:
    return run.events.all()


def run_metric_series(*, run: Run, keys: list[str] | None = None) -> dict[str, list]:
    """{"step": [...], key: [...]} for charts; a key missing at a step gives None there."""
    rows = list(RunMetric.objects.filter(run=run).order_by("step").values_list("step", "data"))
    if keys is None:
        keys = sorted({k for _, data in rows for k in data if k != "step"})
    series: dict[str, list] = {"step": [step for step, _ in rows]}
    for key in keys:
        series[key] = [data.get(key) for _, data in rows]
    return series


def run_metric_rows(*, run: Run, since: int | None = None) -> QuerySet[RunMetric]:
    """The run's metric rows as the trainer logged them (one per step), in step order; only
    the steps after `since` when given."""
    rows = RunMetric.objects.filter(run=run).order_by("step")
    return rows if since is None else rows.filter(step__gt=since)


def run_metric_points(*, run: Run, since: int | None = None, max_points: int) -> dict:
    """The run's numeric metrics after step `since` (all when None) as series aligned on
    `steps`, at most `max_points` of them: {"steps": [...], "series": {key: [...]}}.

    Longer stretches are averaged in buckets of consecutive steps, each point at its bucket's
    last step (so a validation number logged at one step in a bucket is kept, not skipped);
    the last step is always its own point, exact. A key missing at a point gives None."""
    rows = RunMetric.objects.filter(run=run).order_by("step")
    if since is not None:
        rows = rows.filter(step__gt=since)
    points = [(step, _numbers(data)) for step, data in rows.values_list("step", "data")]
    if len(points) > max_points:
        points = _downsample(points, max_points)
    keys = sorted({key for _, numbers in points for key in numbers})
    return {
        "steps": [step for step, _ in points],
        "series": {key: [numbers.get(key) for _, numbers in points] for key in keys},
    }


def _numbers(data: dict) -> dict[str, float]:
    return {
        key: value
        for key, value in data.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and key != "step"
    }


def _downsample(points: list[tuple[int, dict]], max_points: int) -> list[tuple[int, dict]]:
    *head, last = points
    buckets = max(1, max_points - 1)
    size = -(-len(head) // buckets)  # ceiling: at most `buckets` buckets
    merged = []
    for start in range(0, len(head), size):
        bucket = head[start : start + size]
        sums: dict[str, list[float]] = {}
        for _, numbers in bucket:
            for key, value in numbers.items():
                sums.setdefault(key, []).append(value)
        merged.append((bucket[-1][0], {key: sum(v) / len(v) for key, v in sums.items()}))
    return [*merged, last]


def run_samples(*, run: Run, step: int | None = None, limit: int = 20) -> QuerySet:
    """Sample trajectories, newest step first (or those of one step)."""
    samples = TrajectorySample.objects.filter(run=run)
    if step is not None:
        return samples.filter(step=step)
    return samples.order_by("-step", "id")[:limit]


def run_checkpoints(*, run: Run) -> QuerySet[Checkpoint]:
    return run.checkpoints.order_by("step")


def checkpoint_get_for_user(*, user, checkpoint_id: int) -> Checkpoint:
    return get_object_or_404(
        Checkpoint.objects.select_related("run__project"),
        pk=checkpoint_id,
        run__project__owner=user,
    )


def checkpoint_download_url(*, checkpoint: Checkpoint) -> str | None:
    """A short-lived URL of the published archive; None until the checkpoint is published,
    and None for a key outside the checkpoint's own run (never presign another's object)."""
    if not checkpoint.archive_key:
        return None
    if not artifacts.belongs_to_run(checkpoint.archive_key, checkpoint.run):
        logger.warning(
            "checkpoint %s: archive key %r is not under its run's prefix; refused",
            checkpoint.pk,
            checkpoint.archive_key,
        )
        return None
    return presigned_download_url(
        bucket=settings.S3_ARTIFACTS_BUCKET,
        key=checkpoint.archive_key,
        filename=checkpoint.archive_key.rsplit("/", 1)[-1],
    )


def validation_rows(report: dict | None) -> list[dict]:
    """One row per policy of a `sleuth eval --json` report, the trained agent first."""
    policies = (report or {}).get("policies") or {}
    rows = [
        {"name": name, "label": _policy_label(name), "pass_at_k": m.get("pass@k"), **m}
        for name, m in policies.items()
    ]
    rows.sort(key=lambda row: (row["label"] != "Trained agent", row["name"] != COLD_START))
    return rows


def _policy_label(name: str) -> str:
    if name == "echo":
        return "One-shot BM25 (the question as the query)"
    if name.startswith("echo@"):
        return f"One-shot BM25 (the question as the query), top {name[5:]}"
    if name == "base":
        return "Base model, untrained"
    if name.startswith("openai:"):
        return f"{name[7:]} (API model)"
    if name == COLD_START:
        return "The same run before RL (its cold start alone)"
    return "Trained agent"
