"""Leases: which worker works on a run, and until when.

A stage task claims a run with one conditional UPDATE (free or expired lease, expected
status), so two workers never work on the same run. While it works, a heartbeat thread
renews the lease and reads the cancel flag; a worker that loses its lease (another one
took the run over) stops at the next step. A run whose lease expired is found by
`runs.pipeline.runs_sweep` and requeued or failed.
"""

import os
import socket
import threading
import uuid
from datetime import timedelta

from django.db import connection
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from .models import Run


def lease_seconds() -> int:
    return int(os.environ.get("SLEUTH_RUN_LEASE_SECONDS", "120"))


def worker_name() -> str:
    """A name for this worker process (and this claim), shown in the run's events."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def lease_claim(*, run_id: int, owner: str, statuses: list[str]) -> Run | None:
    """Take the run if it is in one of `statuses` and nobody holds a live lease on it."""
    now = timezone.now()
    claimed = (
        Run.objects.filter(pk=run_id, status__in=statuses)
        .filter(Q(lease_owner="") | Q(lease_expires_at__lt=now))
        .update(
            lease_owner=owner,
            lease_expires_at=now + timedelta(seconds=lease_seconds()),
            attempts=F("attempts") + 1,
            started_at=Coalesce("started_at", now),
        )
    )
    return Run.objects.get(pk=run_id) if claimed else None


def lease_renew(*, run_id: int, owner: str) -> bool:
    """Extend the lease; False if this worker no longer holds it."""
    expires = timezone.now() + timedelta(seconds=lease_seconds())
    return bool(Run.objects.filter(pk=run_id, lease_owner=owner).update(lease_expires_at=expires))


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
        """Renew now (also called between stages) and refresh the flags."""
        try:
            self.lost = self.lost or not lease_renew(run_id=self.run_id, owner=self.owner)
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        except Exception:  # the database blinked: keep going, the lease has slack
            pass

    def should_stop(self) -> bool:
        """Checked after every training step: one indexed read, so cancel takes one step."""
        try:
            self.cancelled = Run.objects.filter(pk=self.run_id, cancel_requested=True).exists()
        except Exception:
            pass
        return self.lost or self.cancelled

    def _beat(self) -> None:
        interval = max(1.0, lease_seconds() / 4)
        try:
            while not self._done.wait(interval):
                self.check()
        finally:
            connection.close()  # this thread's own connection
