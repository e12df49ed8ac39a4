"""Fencing (issue 16.2): once another worker took a run over, the worker that lost the lease
changes nothing about the run (no status, no metrics, no checkpoint row) and stops; each
claim writes its files under its own prefix; lease times are the database's. Real Postgres
from the test stack."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from runs import lease, metric_stream, stage
from runs.models import Checkpoint, Run, RunEvent, RunMetric

# Real commits: fencing is about what other connections see.
pytestmark = pytest.mark.django_db(transaction=True)

NEW_OWNER = "other-host:4242:abcdef"


@pytest.fixture
def run(training_run):
    run = training_run
    run.artifacts_prefix = f"projects/{run.project_id}/runs/{run.pk}"
    run.save(update_fields=["artifacts_prefix"])
    return run


def take_over(run: Run) -> None:
    """What happens while a worker is stuck: its lease expires, another worker claims it."""
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    assert lease.lease_claim(run_id=run.pk, owner=NEW_OWNER, statuses=[Run.Status.TRAINING])


def training_stage(run: Run, work) -> Run | None:
    return stage.run_stage(run.pk, [Run.Status.TRAINING], Run.Status.TRAINING, work)


def assert_left_to_new_owner(run: Run) -> None:
    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING
    assert run.lease_owner == NEW_OWNER
    assert not run.events.filter(kind=RunEvent.Kind.ERROR).exists()


def test_a_worker_that_lost_its_lease_does_not_fail_the_run_its_successor_works_on(run):
    def work(run, heartbeat):
        take_over(run)
        raise RuntimeError("the stuck step finally returned an error")

    assert training_stage(run, work) is None

    assert_left_to_new_owner(run)


def test_a_hand_off_by_a_worker_that_lost_its_lease_changes_nothing(run):
    def work(run, heartbeat):
        take_over(run)
        stage.handoff(run, heartbeat, Run.Status.EVALUATING, "Trained; evaluating.")

    training_stage(run, work)

    assert_left_to_new_owner(run)
    assert not run.events.filter(status=Run.Status.EVALUATING).exists()


def test_metrics_from_a_worker_that_lost_its_lease_are_not_recorded(run):
    def work(run, heartbeat):
        stream = metric_stream.MetricStream(run, heartbeat.owner)
        take_over(run)
        stream.add({"step": 1, "reward": 0.5}, [])
        stream.flush()

    training_stage(run, work)

    assert not RunMetric.objects.filter(run=run).exists()
    assert_left_to_new_owner(run)


def test_a_checkpoint_from_a_worker_that_lost_its_lease_is_not_recorded(run):
    def work(run, heartbeat):
        take_over(run)
        with lease.fenced(run.pk, heartbeat.owner):
            Checkpoint.objects.create(run=run, step=3, s3_prefix=f"{run.attempt_prefix}/x")

    training_stage(run, work)

    assert not Checkpoint.objects.filter(run=run).exists()
    assert_left_to_new_owner(run)


def test_each_claim_writes_under_its_own_prefix_recorded_on_the_run(run):
    statuses = [Run.Status.TRAINING]
    first = lease.lease_claim(run_id=run.pk, owner="first", statuses=statuses)
    Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now() - timedelta(minutes=1))
    second = lease.lease_claim(run_id=run.pk, owner="second", statuses=statuses)

    assert first.attempt_prefix.startswith(f"{run.artifacts_prefix}/attempts/")
    assert second.attempt_prefix.startswith(f"{run.artifacts_prefix}/attempts/")
    assert first.attempt_prefix != second.attempt_prefix


def database_now():
    with connection.cursor() as cursor:
        cursor.execute("SELECT now()")
        return cursor.fetchone()[0]


def test_a_worker_whose_clock_runs_ahead_cannot_take_a_live_lease(run, monkeypatch):
    assert lease.lease_claim(run_id=run.pk, owner="first", statuses=[Run.Status.TRAINING])
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() + timedelta(hours=1))

    taken = lease.lease_claim(run_id=run.pk, owner="ahead", statuses=[Run.Status.TRAINING])

    assert taken is None
    run.refresh_from_db()
    assert run.lease_owner == "first"


def test_a_lease_runs_for_its_length_on_the_database_clock(run, monkeypatch):
    real_now = timezone.now
    monkeypatch.setattr(timezone, "now", lambda: real_now() - timedelta(hours=1))

    claimed = lease.lease_claim(run_id=run.pk, owner="behind", statuses=[Run.Status.TRAINING])

    left = (claimed.lease_expires_at - database_now()).total_seconds()
    assert lease.lease_seconds() - 10 < left <= lease.lease_seconds()
