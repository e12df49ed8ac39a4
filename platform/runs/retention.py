"""Retention of a run's history: the metrics, sample trajectories and events of a run that
ended more than SLEUTH_RUN_RETENTION_DAYS ago are deleted, so these tables do not grow
forever. The run itself, its checkpoints (and their validation numbers) and its final
evaluation stay: the run page still shows what it achieved and its model downloads.

Called from the workers' sweeper thread and from `manage.py runs_expire_history`."""

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from .models import Run, RunEvent, RunMetric, TrajectorySample

# Runs cleared per call: the first sweep after a long time must not hold one huge transaction.
RUNS_PER_CALL = 200


def retention_cutoff(*, days: int | None = None):
    """Runs that ended before this lose their history; None when retention is off (0 days)."""
    days = settings.SLEUTH_RUN_RETENTION_DAYS if days is None else days
    return timezone.now() - timedelta(days=days) if days > 0 else None


def run_history_expired(*, run: Run) -> bool:
    """Whether `run`'s history is past the retention (deleted, or about to be)."""
    cutoff = retention_cutoff()
    return bool(cutoff and not run.is_active and run.finished_at and run.finished_at < cutoff)


def runs_history_expire(*, days: int | None = None, limit: int = RUNS_PER_CALL) -> list[int]:
    """Delete the metrics, samples and events of up to `limit` runs that ended more than
    `days` (default SLEUTH_RUN_RETENTION_DAYS) days ago; returns the ids of those runs."""
    cutoff = retention_cutoff(days=days)
    if cutoff is None:
        return []
    has_history = (
        Q(Exists(RunMetric.objects.filter(run=OuterRef("pk"))))
        | Q(Exists(TrajectorySample.objects.filter(run=OuterRef("pk"))))
        | Q(Exists(RunEvent.objects.filter(run=OuterRef("pk"))))
    )
    run_ids = list(
        Run.objects.filter(has_history, status__in=Run.FINISHED, finished_at__lt=cutoff)
        .order_by("finished_at")
        .values_list("pk", flat=True)[:limit]
    )
    for run_id in run_ids:
        with transaction.atomic():
            for model in (RunMetric, TrajectorySample, RunEvent):
                model.objects.filter(run_id=run_id).delete()
    return run_ids
