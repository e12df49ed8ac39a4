"""The sweep: runs whose worker went away, or whose stage no worker took up, are queued
again or failed with the reason, so no run stays queued or "training" forever; and which
queues have a worker at all.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.db.models.functions import Now

from .lease import LeaseLost, fenced, lease_seconds, pickup_deadline
from .models import Run, RunEvent
from .routing import ROUTED, run_needs, stage_queue
from .services import run_event_add
from .stage import STAGES, enqueue_quietly, run_finish_fenced

# Each worker announces the queues it consumes in Redis (the Django cache) every sweep
# interval, with an expiry of a few intervals, so the sweep can tell a queue no worker
# serves (the run fails with that reason) from a busy one (the run keeps waiting). A
# training worker's queues include one per GPU count it holds (runs.routing), so this also
# says which kinds of run some connected worker can take.

QUEUE_KEY = "sleuth:queue-served:{}"


def queues_announce(queues: list[str], ttl_seconds: float) -> None:
    from django.core.cache import cache

    cache.set_many({QUEUE_KEY.format(q): True for q in queues}, timeout=max(int(ttl_seconds), 1))


def queue_served(queue: str) -> bool:
    """Whether a worker announced `queue` lately; True when the cache cannot say."""
    from django.core.cache import cache

    try:
        return bool(cache.get(QUEUE_KEY.format(queue)))
    except Exception:
        return True


def runs_sweep() -> list[int]:
    """Requeue or fail active runs whose lease (or pick-up deadline) passed; returns their ids.

    A worker killed mid-stage stops renewing its lease: its run is requeued and the next
    worker resumes it from the last checkpoint, up to SLEUTH_RUN_MAX_ATTEMPTS claims. A stage
    that no worker claimed is queued again (the broker may have lost the task, or been down
    when the run was created); on a queue no worker serves, up to SLEUTH_RUN_MAX_REQUEUES
    times. Then the run fails with the reason, so no run stays queued or "training" forever,
    with one exception (issue 69): a run that needs GPUs no connected worker has waits for
    them without a limit, its page saying what for, until a worker that has them connects or
    the customer cancels it.

    For a lease's length after the database starts, no held lease is swept: its holder
    could not renew it while the database was down (a restart longer than a lease would
    otherwise send every training run back to its last checkpoint), and a holder that died
    meanwhile is swept a lease later.
    """
    swept = []
    due = Run.objects.filter(status__in=Run.ACTIVE).filter(
        Q(lease_expires_at__lt=Now()) | Q(lease_expires_at__isnull=True, lease_owner="")
    )
    if database_up_less_than_a_lease():
        due = due.filter(lease_owner="")  # pick-up deadlines only: nobody holds those
    for run in due:
        taken = Run.objects.filter(
            pk=run.pk, lease_owner=run.lease_owner, lease_expires_at=run.lease_expires_at
        ).update(lease_owner="", lease_expires_at=pickup_deadline())
        if not taken:
            continue  # renewed or swept by someone else meanwhile
        run.refresh_from_db()
        swept.append(run.pk)
        try:
            _sweep_one(run)
        except LeaseLost:
            continue  # claimed by a worker meanwhile
    return swept


def database_up_less_than_a_lease() -> bool:
    """Whether Postgres started less than a lease's length ago (by its own clock)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT now() - pg_postmaster_start_time() < %s", [timedelta(seconds=lease_seconds())]
        )
        return cursor.fetchone()[0]


def _sweep_one(run: Run) -> None:
    """End or requeue one run the sweep took (nobody holds it: owner "")."""
    if run.cancel_requested:
        run_finish_fenced(run=run, owner="", status=Run.Status.CANCELLED, reason="Cancelled.")
        return
    if run.attempts >= settings.SLEUTH_RUN_MAX_ATTEMPTS:
        run_finish_fenced(
            run=run,
            owner="",
            status=Run.Status.FAILED,
            reason=(
                f"The worker stopped responding while {run.status} ({run.attempts} "
                "attempts). Start the run again; if it fails the same way, contact support."
            ),
        )
        return
    queue = stage_queue(run, STAGES[run.status])
    needs = run_needs(run)
    served = queue_served(queue)
    waits_for_gpus = not served and run.status in ROUTED and needs.device == "gpu"
    if served or waits_for_gpus:
        # A run that needs GPUs waits for a worker that has them for as long as it takes,
        # its page saying what for (runs.routing.run_waiting_for): GPU workers come and go,
        # and a fleet may start one when it sees the queue. The customer may cancel it.
        requeues = 0
    else:
        requeues = run.requeues + 1
        if requeues > settings.SLEUTH_RUN_MAX_REQUEUES:
            run_finish_fenced(
                run=run,
                owner="",
                status=Run.Status.FAILED,
                reason=(
                    f"No worker serves queue {queue}, so nothing could take the run up while "
                    f"{run.status}. The platform's operator must start a worker for that "
                    "queue; then start the run again."
                ),
            )
            return
    with fenced(run.pk, ""):
        Run.objects.filter(pk=run.pk).update(requeues=requeues)
        if run.attempts:
            message = "The worker stopped responding; the run was queued again."
        elif waits_for_gpus:
            message = f"No worker with {needs.describe()} is connected; the run waits for one."
        else:
            message = f"No worker picked the run up yet; queued again on {queue}."
        # A run waiting for GPUs is swept every lease, perhaps for hours: that event once.
        last = run.events.order_by("-at", "-id").values_list("message", flat=True).first()
        if not (waits_for_gpus and last == message):
            run_event_add(run=run, kind=RunEvent.Kind.WARNING, message=message)
    enqueue_quietly(run)
