"""Leases: which worker works on a run, and until when.

A stage task claims a run with one conditional UPDATE (free or expired lease, expected
status), so two workers never work on the same run. Every later write of the stage that
matters (a status change, metrics, a checkpoint) is fenced: it commits only in a
transaction that first locks the run's row and finds this worker still the owner
(`fenced`), so a worker that lost its lease (another one took the run over) changes
nothing and stops (`LeaseLost`). Each claim also gets a fresh `attempt_prefix` on S3 for
its files, so a worker that has not noticed yet cannot overwrite its successor's.

Lease times come from the database's clock (`now()` in SQL), never the host's: workers on
machines whose clocks disagree still agree on who holds a run.

While a stage works, a heartbeat thread renews the lease, but only while the stage makes
progress: liveness is not progress. The stage's own thread records progress (`progress()`
after each training step; `should_stop()`, which the trainer calls between rollout rounds,
decoded tokens and micro-batches), and a stage that makes none for its stall time, or runs
past its time limit, stops: the heartbeat stops renewing, `should_stop()` turns true, and a
stage in the main thread is interrupted (SIGALRM) with `StageStalled` / `StageTimedOut`,
even inside a call that never returns (a socket read, a lock). A stage that cannot be
interrupted still loses its lease, and `runs.sweep.runs_sweep` requeues or fails the run.
"""

import logging
import os
import signal
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.db import DatabaseError, connection, transaction
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Q, Value
from django.db.models.functions import Coalesce, Concat, Now

from .models import Run

logger = logging.getLogger(__name__)


class LeaseLost(Exception):
    """This worker no longer holds the run's lease: it stops and leaves the run alone."""


class StageInterrupted(Exception):
    """The heartbeat stopped the stage; the message says why (for the run's events)."""


class StageStalled(StageInterrupted):
    """The stage made no progress for its stall time (a step hung)."""


class StageTimedOut(StageInterrupted):
    """The stage ran past its time limit."""


def lease_seconds() -> int:
    from django.conf import settings

    return settings.SLEUTH_RUN_LEASE_SECONDS


# How often the stage's thread reads the cancel flag, and writes progress_at, at most:
# `should_stop()` is called per decoded token, so it must cost nothing most of the time.
CANCEL_READ_SECONDS = 1.0
PROGRESS_WRITE_SECONDS = 5.0


def db_now_plus(seconds: float) -> ExpressionWrapper:
    """`now() + interval` evaluated by Postgres: a deadline on the database's clock."""
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds), output_field=DurationField()),
        output_field=DateTimeField(),
    )


def pickup_deadline() -> ExpressionWrapper:
    """When a queued stage must have been claimed; past it the sweep queues it again."""
    return db_now_plus(lease_seconds())


def worker_name() -> str:
    """A name for this worker process (and this claim), shown in the run's events."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def lease_claim(*, run_id: int, owner: str, statuses: list[str]) -> Run | None:
    """Take the run if it is in one of `statuses` and nobody holds a live lease on it."""
    claimed = (
        Run.objects.filter(pk=run_id, status__in=statuses)
        .filter(Q(lease_owner="") | Q(lease_expires_at__lt=Now()))
        .update(
            lease_owner=owner,
            lease_expires_at=db_now_plus(lease_seconds()),
            attempts=F("attempts") + 1,
            requeues=0,
            progress_at=Now(),
            attempt_prefix=Concat(
                F("artifacts_prefix"), Value(f"/attempts/{uuid.uuid4().hex[:12]}")
            ),
            started_at=Coalesce("started_at", Now()),
        )
    )
    return Run.objects.get(pk=run_id) if claimed else None


def lease_renew(*, run_id: int, owner: str) -> bool:
    """Extend the lease; False if this worker no longer holds it."""
    renewed = Run.objects.filter(pk=run_id, lease_owner=owner).update(
        lease_expires_at=db_now_plus(lease_seconds())
    )
    return bool(renewed)


@contextmanager
def fenced(run_id: int, owner: str) -> Iterator[None]:
    """A transaction that commits only while `owner` holds the lease of the active run.

    The run's row stays locked until the commit, so no claim or sweep can take the run
    between the check and the writes. `owner=""` means "while nobody holds it" (the sweep,
    a task that ran out of retries). Raises LeaseLost, writing nothing, otherwise.
    """
    with transaction.atomic():
        held = (
            Run.objects.select_for_update()
            .filter(pk=run_id, lease_owner=owner, status__in=Run.ACTIVE)
            .values_list("pk", flat=True)
        )
        if not list(held):
            raise LeaseLost(f"run {run_id} is no longer held by {owner or 'nobody'}")
        yield


def reconnect() -> None:
    """Drop this thread's database connection after an error, so the next query opens a
    new one (after a Postgres restart the old one stays broken forever)."""
    if connection.in_atomic_block:
        return  # the transaction's owner rolls back and reconnects
    try:
        connection.close()
    except DatabaseError:
        connection.connection = None


class Heartbeat:
    """Renews a lease in a background thread while the stage makes progress.

    `stall_seconds`: the longest the stage may go without `progress()` or `should_stop()`
    from its own thread (None: no stall check, for stages whose work has no progress
    hooks). `limit_seconds`: the stage's time limit from the claim (None: none). Past
    either, the heartbeat stops renewing, records why in `interrupted`, and interrupts the
    stage's thread when that is the main thread (signals reach only it).
    """

    def __init__(
        self,
        run_id: int,
        owner: str,
        *,
        stall_seconds: float | None = None,
        limit_seconds: float | None = None,
    ):
        self.run_id, self.owner = run_id, owner
        self.stall_seconds, self.limit_seconds = stall_seconds, limit_seconds
        self.lost = False
        self.cancelled = False
        self.interrupted: StageInterrupted | None = None
        self._started = self._progressed = self._progress_written = time.monotonic()
        self._cancel_read = 0.0
        self._work_thread: int | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> "Heartbeat":
        if threading.current_thread() is threading.main_thread():
            _install_interrupt_handler()
            self._work_thread = threading.get_ident()
            _armed[self._work_thread] = self
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        _armed.pop(self._work_thread, None)
        self._done.set()
        self._thread.join(timeout=10)

    def progress(self) -> None:
        """The stage's own work moved on (a training step ended). Recorded on the run as
        `progress_at`, at most every few seconds."""
        now = time.monotonic()
        self._progressed = now
        if now - self._progress_written >= PROGRESS_WRITE_SECONDS:
            self._progress_written = now
            try:
                Run.objects.filter(pk=self.run_id, lease_owner=self.owner).update(progress_at=Now())
            except DatabaseError:
                reconnect()

    def check(self) -> None:
        """Renew now (also called between stages) and refresh the flags. A database error
        is logged and the connection dropped, so the next beat reconnects. No renewal once
        the stage stalled or ran out of time: its lease lapses."""
        if self.interrupted is None:
            self.interrupted = self._overdue()
            if self.interrupted is not None:
                self._interrupt()
        if self.interrupted is not None:
            return
        try:
            self.lost = self.lost or not lease_renew(run_id=self.run_id, owner=self.owner)
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        except DatabaseError as error:
            logger.warning(
                "run %s: could not renew the lease (%s); reconnecting", self.run_id, error
            )
            reconnect()

    def should_stop(self) -> bool:
        """The trainer's hook, called after every step and inside long work (between
        rollout rounds, decoded tokens and micro-batches): a call is progress, and reads the
        cancel flag at most once a second, so cancel acts within seconds, mid-step too."""
        self.progress()
        now = time.monotonic()
        if now - self._cancel_read >= CANCEL_READ_SECONDS:
            self._cancel_read = now
            try:
                self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
            except DatabaseError:
                reconnect()
        return self.lost or self.cancelled or self.interrupted is not None

    def _overdue(self) -> StageInterrupted | None:
        now = time.monotonic()
        if self.limit_seconds is not None and now - self._started > self.limit_seconds:
            return StageTimedOut(f"ran past its time limit of {_duration(self.limit_seconds)}")
        if self.stall_seconds is not None and now - self._progressed > self.stall_seconds:
            return StageStalled(f"made no progress for {_duration(now - self._progressed)}")
        return None

    def _interrupt(self) -> None:
        logger.warning("run %s: the stage %s; stopping it", self.run_id, self.interrupted)
        if self._work_thread is not None and _armed.get(self._work_thread) is self:
            signal.pthread_kill(self._work_thread, signal.SIGALRM)

    def _beat(self) -> None:
        interval = max(1.0, lease_seconds() / 4)
        for limit in (self.stall_seconds, self.limit_seconds):
            if limit is not None:  # notice a stall or the time limit within a few seconds
                interval = min(interval, max(limit / 4, 0.25))
        try:
            while not self._done.wait(interval):
                self.check()
        finally:
            connection.close()  # this thread's own connection


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} seconds"
    return f"{seconds / 60:.0f} minutes"


# Heartbeats whose stage runs in the main thread, by thread id: the SIGALRM handler raises
# the heartbeat's reason there. Installed once per process and left in place (a signal
# still pending after a stage ended finds no heartbeat and is ignored).
_armed: dict[int, Heartbeat] = {}
_previous_handler = None


def _install_interrupt_handler() -> None:
    global _previous_handler
    if _previous_handler is not None:
        return
    _previous_handler = signal.getsignal(signal.SIGALRM) or signal.SIG_DFL

    def on_alarm(signum, frame) -> None:
        heartbeat = _armed.get(threading.get_ident())
        if heartbeat is not None and heartbeat.interrupted is not None:
            _armed.pop(threading.get_ident(), None)  # one interruption per stage
            raise type(heartbeat.interrupted)(*heartbeat.interrupted.args)
        if callable(_previous_handler):
            _previous_handler(signum, frame)

    signal.signal(signal.SIGALRM, on_alarm)
