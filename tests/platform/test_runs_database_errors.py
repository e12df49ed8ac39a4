"""Database errors in a run's stage (issue 16.5): only a lost connection is retried; a
constraint or data Postgres refuses fails the run at once with its reason. Metrics and
samples never carry what jsonb refuses (NUL, NaN), so one bad string cannot fail every flush.
Real Postgres from the test stack."""

import pytest
from django.db import connection

from runs import metric_stream, stage
from runs.models import Run, RunEvent, RunMetric, TrajectorySample

# Real commits: a failed statement must not hide inside the test's own transaction.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(training_run):
    return training_run


def training_stage(run: Run, work) -> Run | None:
    return stage.run_stage(run.pk, [Run.Status.TRAINING], Run.Status.TRAINING, work)


def test_data_postgres_refuses_fails_the_run_with_the_reason_not_a_retry(run):
    def work(run, heartbeat):
        RunMetric.objects.create(run=run, step=1, data={"answer": "a\x00b"})

    finished = training_stage(run, work)

    assert finished.status == Run.Status.FAILED
    assert "went wrong on our side" in finished.status_reason  # its text is in the log
    assert "reach the database" not in finished.status_reason


def test_a_constraint_violation_fails_the_run_with_the_reason_not_a_retry(run):
    def work(run, heartbeat):
        RunMetric.objects.create(run=run, step=1, data={})
        RunMetric.objects.create(run=run, step=1, data={})  # one metric per step

    finished = training_stage(run, work)

    assert finished.status == Run.Status.FAILED
    assert "went wrong on our side" in finished.status_reason  # its text is in the log


def test_a_lost_database_connection_is_retried_and_the_lease_given_back(run):
    def work(run, heartbeat):
        with connection.cursor() as cursor:  # the server ends this session, as in a restart
            cursor.execute("SELECT pg_terminate_backend(pg_backend_pid())")

    with pytest.raises(stage.TransientError, match="Could not reach the database"):
        training_stage(run, work)

    run.refresh_from_db()  # reconnected
    assert run.status == Run.Status.TRAINING
    assert run.lease_owner == ""  # released: a retry claims it at once
    warning = run.events.filter(kind=RunEvent.Kind.WARNING).last()
    assert "trying again" in warning.message


def test_metrics_and_samples_with_nul_and_nan_are_flushed(run):
    stream = metric_stream.MetricStream(run)
    stream.add(
        {"step": 1, "loss": float("nan"), "reward": float("inf"), "note": "a\x00b"},
        [{"step": 1, "question_id": "q\x001", "answer": "x\x00y", "turns": [{"text": "p\x00"}]}],
    )
    stream.flush()

    assert RunMetric.objects.get(run=run, step=1).data == {
        "step": 1,
        "loss": None,
        "reward": None,
        "note": "ab",
    }
    sample = TrajectorySample.objects.get(run=run, step=1)
    assert sample.question_id == "q1"
    assert sample.data == {"step": 1, "question_id": "q1", "answer": "xy", "turns": [{"text": "p"}]}
