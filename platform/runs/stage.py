"""The stage machinery every run stage shares: claim the run with a lease, mark its status,
do the stage's work under a heartbeat, then hand it to the next stage or end it.

Each stage claims the run with a lease (runs.lease), does its work, then hands the run to
the next stage: it sets the next status, clears the owner and queues the next task. The
lease's expiry doubles as a pick-up deadline, so a hand-off that never reached a worker
(the broker was down) is requeued by the sweep (runs.sweep), and a worker killed mid-stage
is replaced by another that resumes from the last checkpoint on S3.

Fencing: every change a stage makes to its run commits only while the stage's worker
still holds the lease (`runs.lease.fenced`); a worker that lost it (its run was taken over
after its lease expired) stops and leaves the run to the new owner (`LeaseLost`).

Errors: `StageFailed` is a problem the customer can act on (the run fails with its
message); `TransientError` (S3 unreachable, the database connection lost, the worker's
disk full) releases the lease and lets the task retry with backoff; after `SLEUTH_RUN_MAX_ATTEMPTS`
claims the run fails with the reason. Any other database error (a constraint, data
Postgres refuses) would fail the same way again: the run fails at once with it
(see `_transient`). A write that meets a service restart waits it out (`ride_out`).
"""

from __future__ import annotations

import errno
import logging
import time
import uuid

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import F
from django.db.models.functions import Now

from core.queues import enqueue

from .lease import (
    Heartbeat,
    LeaseLost,
    StageInterrupted,
    StageTimedOut,
    fenced,
    lease_claim,
    pickup_deadline,
    reconnect,
    worker_name,
)
from .models import Run, RunEvent
from .notifications import run_end_notify_later
from .routing import ROUTED, run_needs, worker_refusal, worker_taken_up
from .services import run_event_add

logger = logging.getLogger(__name__)

TRANSIENT = (BotoCoreError, ClientError, ConnectionError, TimeoutError)
# An OperationalError is worth retrying when its SQLSTATE says the server went away, is
# starting or stopping (class 08, 57P01-03), has no connection slot free (53300), or the
# transaction lost a race (40001, 40P01); psycopg gives none when the connection broke on
# the client side.
RETRYABLE_SQLSTATES = {"57P01", "57P02", "57P03", "40001", "40P01", "53300"}


class StageFailed(Exception):
    """A run that cannot go on; the message is shown to the customer as the reason."""


class TransientError(Exception):
    """A service was unreachable; the stage may succeed if tried again."""


# Which task serves each status; the sweep requeues from this table. Its queue is
# core.queues': preparing and publishing on the ingest queue, training and evaluating on the
# train queue its needs name (runs.routing.stage_queue).
STAGES = {
    Run.Status.QUEUED: "config.tasks.run_prepare",
    Run.Status.PREPARING: "config.tasks.run_prepare",
    Run.Status.TRAINING: "config.tasks.run_train",
    Run.Status.EVALUATING: "config.tasks.run_evaluate",
    Run.Status.PUBLISHING: "config.tasks.run_publish",
}


def stage_enqueue(run: Run) -> None:
    enqueue(STAGES[run.status], args=[run.pk], needs=run_needs(run))


# Each stage's time limit is this share of the run's budget (its max_minutes), and at least
# SLEUTH_RUN_STAGE_MIN_SECONDS: training may use the whole budget (the trainer stops itself
# at `TrainConfig.training_seconds`, earlier), evaluation half of it, the rest a quarter.
STAGE_SHARES = {
    Run.Status.PREPARING: 0.25,
    Run.Status.TRAINING: 1.0,
    Run.Status.EVALUATING: 0.5,
    Run.Status.PUBLISHING: 0.25,
}


def run_budget_seconds(run: Run) -> float:
    return 60 * float(run.config.get("max_minutes") or settings.SLEUTH_MAX_RUN_MINUTES)


def stage_limit_seconds(run: Run, status: str) -> float:
    floor = settings.SLEUTH_RUN_STAGE_MIN_SECONDS
    return max(floor, STAGE_SHARES[status] * run_budget_seconds(run))


def stall_seconds(run: Run) -> float:
    """How long training may go without progress (a step, a rollout round, a decoded token,
    a micro-batch) before it counts as hung: SLEUTH_RUN_STALL_SECONDS, or a twentieth of
    the run's budget between 5 and 30 minutes (a checkpoint upload or a model load must
    fit in it)."""
    if settings.SLEUTH_RUN_STALL_SECONDS is not None:
        return settings.SLEUTH_RUN_STALL_SECONDS
    return min(max(run_budget_seconds(run) / 20, 300.0), 1800.0)


def run_stage(
    run_id: int, statuses: list[str], status: str, work, *, progress_hooks: bool = False
) -> Run | None:
    """Claim the run, mark it `status`, run `work(run, heartbeat)` under a heartbeat, and
    turn errors into a failed run (StageFailed), a retry (TransientError) or a crash report.
    A worker that lost the lease returns None and leaves the run to its new owner.

    The stage has a time limit from the run's budget; a stage whose work reports progress
    (`progress_hooks`: training) is also stopped when it makes none for `stall_seconds`:
    it is queued again, and failed after SLEUTH_RUN_MAX_ATTEMPTS such claims."""
    owner = worker_name()
    run = lease_claim(run_id=run_id, owner=owner, statuses=statuses)
    if run is None:
        return None  # another worker has it, or it moved on (a duplicate delivery)
    try:
        if run.cancel_requested:
            return run_finish_fenced(
                run=run, owner=owner, status=Run.Status.CANCELLED, reason="Cancelled."
            )
        if refusal := worker_refusal(run):
            return _hand_back(run, owner, refusal)
        if run.attempts > settings.SLEUTH_RUN_MAX_ATTEMPTS:
            return run_finish_fenced(
                run=run,
                owner=owner,
                status=Run.Status.FAILED,
                reason=(
                    f"Gave up after {settings.SLEUTH_RUN_MAX_ATTEMPTS} attempts at {run.status}: "
                    "the workers kept stopping or could not reach storage. Start the run "
                    "again; if it fails the same way, contact support."
                ),
            )
        if run.status != status:
            run_transition(
                run=run, owner=owner, status=status, reason=f"{status.capitalize()} on {owner}."
            )
        elif run.attempts > 1:
            run_event_add(
                run=run,
                kind=RunEvent.Kind.WARNING,
                message=f"Resumed {status} on {owner} (attempt {run.attempts}).",
            )
        elif status in ROUTED:  # the hand-off set the status: say which worker took it up
            run_event_add(run=run, message=worker_taken_up(owner, status))
        with Heartbeat(
            run.pk,
            owner,
            stall_seconds=stall_seconds(run) if progress_hooks else None,
            limit_seconds=stage_limit_seconds(run, status),
        ) as heartbeat:
            work(run, heartbeat)
    except LeaseLost:
        logger.warning("run %s: lost its lease while %s; left to its new owner", run_id, status)
        return None
    except StageInterrupted as stop:
        return _interrupted(run, owner, status, stop)
    except StageFailed as failure:
        return _fail_if_held(run, owner, str(failure))
    except Exception as error:
        if _transient(error):
            if not _release(run.pk, owner, f"{_describe(error)}; trying again."):
                return None  # taken over meanwhile: the new owner goes on
            raise TransientError(_describe(error)) from error
        # The customer sees no exception text (paths, hosts, queries): a reference that
        # finds the traceback in the worker's log.
        reference = uuid.uuid4().hex[:8]
        logger.exception("run %s failed in %s (reference %s)", run_id, status, reference)
        return _fail_if_held(
            run,
            owner,
            f"Something went wrong on our side while {status} (reference {reference}). "
            "Start the run again; if it fails the same way, contact support with the reference.",
        )
    run.refresh_from_db()
    return run


def run_transition(*, run: Run, owner: str, status: str, reason: str, also=None, **fields) -> Run:
    """Move the run to `status` with its event, in one transaction that commits only while
    `owner` holds the lease (a compare-and-set on the owner); `also()` runs inside it.
    Raises LeaseLost, changing nothing, otherwise."""
    with fenced(run.pk, owner):
        if also is not None:
            also()
        Run.objects.filter(pk=run.pk).update(status=status, status_reason=reason, **fields)
        kind = RunEvent.Kind.ERROR if status == Run.Status.FAILED else RunEvent.Kind.STATUS
        run_event_add(run=run, kind=kind, status=status, message=reason or f"{status}.")
    run.refresh_from_db()
    return run


def run_finish_fenced(*, run: Run, owner: str, status: str, reason: str, also=None) -> Run:
    """End the run (succeeded, failed or cancelled) and release its lease, if `owner` still
    holds it ("" for a run nobody holds); its owner is mailed once this commits."""
    run = run_transition(
        run=run,
        owner=owner,
        status=status,
        reason=reason,
        also=also,
        finished_at=Now(),
        lease_owner="",
        lease_expires_at=None,
    )
    run_end_notify_later(run)
    return run


def _interrupted(run: Run, owner: str, status: str, stop: StageInterrupted) -> Run | None:
    """A stage the heartbeat stopped: past its time limit the run fails (another try would
    be as long); a stall queues it again for a fresh worker, up to SLEUTH_RUN_MAX_ATTEMPTS
    claims."""
    logger.warning("run %s: stopped while %s: %s", run.pk, status, stop)
    reconnect()  # the signal may have landed inside a query
    if isinstance(stop, StageTimedOut):
        budget = run_budget_seconds(run) / 60
        return _fail_if_held(
            run,
            owner,
            f"{status.capitalize()} {stop}, set by the run's budget of {budget:g} minutes. "
            "Start the run again with fewer steps or a larger budget.",
        )
    if run.attempts >= settings.SLEUTH_RUN_MAX_ATTEMPTS:
        return _fail_if_held(
            run,
            owner,
            f"The run {stop} while {status}, {run.attempts} times in a row: a step never "
            "finished (a stuck judge, storage or rollout). Start the run again; if it fails "
            "the same way, contact support.",
        )
    message = f"The run {stop} while {status} on {owner}; queued again for another worker."
    if not _release(run.pk, owner, message):
        return None  # taken over meanwhile
    enqueue_quietly(run)
    run.refresh_from_db()
    return run


def _hand_back(run: Run, owner: str, refusal: str) -> None:
    """A run this worker cannot hold (runs.routing): give it back before any work, the claim
    not counted as an attempt, so it fails for no worker's mistake. The sweep queues it again
    at its pick-up deadline, not at once: a worker short of memory on the right queue would
    otherwise take it back in a loop. The event is written once, not at every hand-back."""
    worker = owner.rsplit(":", 1)[0]  # host:pid, without the claim's own suffix
    message = (
        f"{worker} cannot take this run: {refusal}. Handed back; it waits for "
        f"{run_needs(run).worker()}."
    )
    logger.warning("run %s: %s", run.pk, message)
    with fenced(run.pk, owner):
        Run.objects.filter(pk=run.pk).update(
            lease_owner="", lease_expires_at=pickup_deadline(), attempts=F("attempts") - 1
        )
        last = run.events.order_by("-at", "-id").values_list("message", flat=True).first()
        if last != message:
            run_event_add(run=run, kind=RunEvent.Kind.WARNING, message=message)
    return None


def _fail_if_held(run: Run, owner: str, reason: str) -> Run | None:
    try:
        return run_finish_fenced(run=run, owner=owner, status=Run.Status.FAILED, reason=reason)
    except LeaseLost:
        logger.warning("run %s: not failed (%s): another worker holds it now", run.pk, reason)
        return None


def _transient(error: BaseException) -> bool:
    """Storage or the network unreachable, the database connection lost, or the worker's disk
    full: another attempt may succeed. Other database errors (IntegrityError…) would repeat."""
    if isinstance(error, TRANSIENT + (TransientError, InterfaceError)):
        return True
    if _disk_full(error):
        return True  # this worker's disk: another worker, or this one later, may have room
    if isinstance(error, OperationalError):
        sqlstate = getattr(error.__cause__, "sqlstate", None)
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in RETRYABLE_SQLSTATES
    return False


# How long a training step's writes wait for the database or storage to come back (a
# restart takes seconds) before the stage gives up and is retried from its last checkpoint.
RIDE_OUT_SECONDS = 60.0


def ride_out(call, what: str):
    """`call()`, tried again while it fails on a lost connection to the database or storage
    (a restart), reconnecting and backing off, for up to RIDE_OUT_SECONDS: a service
    restart in the middle of training costs no step. Then, or for any other error, it
    raises (the stage is retried from its last checkpoint). A lease that lapsed meanwhile is
    safe: the writes are fenced (LeaseLost once another worker took the run). Not inside a
    transaction, whose broken connection only its owner resets."""
    deadline = time.monotonic() + RIDE_OUT_SECONDS
    pause = 0.5
    while True:
        try:
            return call()
        except Exception as error:
            if isinstance(error, ClientError):
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
                passing = status >= 500  # the store is starting or stopping
            elif isinstance(error, OSError) and not isinstance(error, TRANSIENT):
                passing = False  # a local file (the disk full…), not a service
            else:
                passing = _transient(error)
            if not passing or connection.in_atomic_block or time.monotonic() > deadline:
                raise
            logger.warning("%s failed (%r); trying again in %.1f s", what, error, pause)
            reconnect()
            time.sleep(pause)
            pause = min(2 * pause, 2.0)


def _describe(error: Exception) -> str:
    """What the customer reads about a transient error: which service, never its text
    (endpoints, hosts, paths); the operator's log has that."""
    logger.warning("transient error in a run stage: %r", error)
    if isinstance(error, (BotoCoreError, ClientError)):
        return "Could not reach the artifact store"
    if isinstance(error, DatabaseError):
        return "Could not reach the database"
    if isinstance(error, TransientError):
        return str(error)
    if _disk_full(error):
        return "The worker ran out of disk space"
    return "A service the run needs did not answer"


def _disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def _release(run_id: int, owner: str, message: str) -> bool:
    """Give the lease back with a pick-up deadline, so a retry (or the sweep) takes over.
    False when another worker holds the run by now."""
    try:
        connection.close_if_unusable_or_obsolete()  # a lost connection: reconnect
        released = Run.objects.filter(pk=run_id, lease_owner=owner).update(
            lease_owner="", lease_expires_at=pickup_deadline()
        )
        if not released:
            return False
        run_event_add(run=Run.objects.get(pk=run_id), kind=RunEvent.Kind.WARNING, message=message)
    except DatabaseError:
        pass  # the lease expires on its own
    return True


def handoff(
    run: Run, heartbeat: Heartbeat, status: str, reason: str, *, also=None, **fields
) -> None:
    """Move the run to the next stage and queue its task (after commit), if this worker
    still holds it; otherwise LeaseLost and nothing changes."""
    if heartbeat.lost:
        raise LeaseLost(f"run {run.pk} was taken over")
    with transaction.atomic():
        run_transition(
            run=run,
            owner=heartbeat.owner,
            status=status,
            reason=reason,
            also=also,
            lease_owner="",
            lease_expires_at=pickup_deadline(),
            attempts=0,  # attempts count claims of one stage
            requeues=0,
            **fields,
        )
        transaction.on_commit(lambda: enqueue_quietly(run))


def enqueue_quietly(run: Run) -> None:
    try:
        stage_enqueue(run)
    except Exception:  # the broker is down: the sweep requeues once the deadline passes
        logger.warning("could not queue run %s (%s); the sweep will", run.pk, run.status)
