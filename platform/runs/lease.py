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

While a stage works, a heartbeat thread renews the lease and reads the cancel flag. A
run whose lease expired is found by `runs.pipeline.runs_sweep` and requeued or failed.
"""

import logging
import os
import socket
import threading
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


def lease_seconds() -> int:
    return int(os.environ.get("SLEUTH_RUN_LEASE_SECONDS", "120"))


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
    """Renews a lease in a background thread; `should_stop()` is the trainer's hook."""

    def __init__(self, run_id: int, owner: str):
        self.run_id, self.owner = run_id, owner
        self.lost = False
        self.cancelled = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{run_id}", daemon=True)

    def __enter__(self) -> "Heartbeat":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join(timeout=10)

    def check(self) -> None:
        """Renew now (also called between stages) and refresh the flags. A database error
        is logged and the connection dropped, so the next beat reconnects."""
        try:
            self.lost = self.lost or not lease_renew(run_id=self.run_id, owner=self.owner)
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        except DatabaseError as error:
            logger.warning(
                "run %s: could not renew the lease (%s); reconnecting", self.run_id, error
            )
            reconnect()

    def should_stop(self) -> bool:
        """Checked after every training step: one indexed read, so cancel takes one step."""
        try:
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        except DatabaseError:
            reconnect()
        return self.lost or self.cancelled

    def _beat(self) -> None:
        interval = max(1.0, lease_seconds() / 4)
        try:
            while not self._done.wait(interval):
                self.check()
        finally:
            connection.close()  # this thread's own connection
