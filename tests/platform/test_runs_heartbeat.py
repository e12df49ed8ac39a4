"""The lease heartbeat survives the database dropping its connection (issue 16.3), as in a
Postgres restart: it reconnects and goes on renewing, so a healthy run keeps its lease.
Real Postgres from the test stack; the server ends the heartbeat's session itself."""

import time

import pytest
from django.db import connection
from django.utils import timezone

from corpora.services import project_create
from runs import lease
from runs.models import Run
from runs.presets import preset_config

pytestmark = pytest.mark.django_db(transaction=True)

# The heartbeat's own query (its thread's connection): the read of the cancel flag that
# follows every renewal.
HEARTBEAT_BACKEND = """
    SELECT pid FROM pg_stat_activity
    WHERE datname = current_database() AND pid <> pg_backend_pid()
      AND query LIKE 'SELECT%%"runs_run"."cancel_requested"%%'
"""


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, what
        time.sleep(0.2)
    return result


def heartbeat_backends() -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(HEARTBEAT_BACKEND)
        return [pid for (pid,) in cursor.fetchall()]


def test_the_heartbeat_reconnects_and_keeps_the_lease_after_its_connection_is_dropped(alice, knob):
    knob("SLEUTH_RUN_LEASE_SECONDS", 4)  # a beat a second
    project = project_create(owner=alice, name="Filings")
    run = Run.objects.create(
        project=project,
        created_by=alice,
        name="Run",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.TRAINING,
    )
    owner = lease.worker_name()
    assert lease.lease_claim(run_id=run.pk, owner=owner, statuses=[Run.Status.TRAINING])

    with lease.Heartbeat(run.pk, owner):
        backends = wait_for(heartbeat_backends, 15, "the heartbeat never renewed")
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM unnest(%s) AS pid", [backends])
        # Longer than a lease: a heartbeat stuck on its dead connection lets it expire.
        time.sleep(lease.lease_seconds() + 1)
        run.refresh_from_db()
        assert run.lease_expires_at > timezone.now()
        assert run.lease_owner == owner
