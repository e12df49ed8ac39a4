"""A worker's disk full while a stage writes (a checkpoint, an index) (issue 16): the run is
given back for another try, not failed as a crash; when every try finds no room, it fails
with a reason the customer can read. Real Postgres from the test stack."""

import errno
from types import SimpleNamespace

import pytest

from config import tasks
from runs import pipeline, stage
from runs.models import Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def run(training_run):
    return training_run


def train_on_a_full_disk(*, run_id: int) -> Run | None:
    def work(run, heartbeat):
        path = f"/srv/sleuth-work/runs/{run_id}/checkpoints/step-000003.partial"
        raise OSError(errno.ENOSPC, "No space left on device", path)

    return stage.run_stage(run_id, [Run.Status.TRAINING], Run.Status.TRAINING, work)


def test_a_full_disk_gives_the_run_back_for_another_try(run):
    with pytest.raises(stage.TransientError, match="ran out of disk space"):
        train_on_a_full_disk(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING
    assert run.lease_owner == ""  # released: a retry (or another worker) claims it at once
    warning = run.events.filter(kind=RunEvent.Kind.WARNING).last()
    assert warning.message == "The worker ran out of disk space; trying again."  # no path


def test_when_every_try_finds_no_room_the_run_fails_with_the_reason(run, monkeypatch):
    monkeypatch.setattr(pipeline, "run_train", train_on_a_full_disk)
    last_try = SimpleNamespace(request=SimpleNamespace(retries=tasks.RUN_STAGE_RETRIES))

    assert tasks._run_stage(last_try, "run_train", run.pk) == "failed"

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert run.status_reason == "The worker ran out of disk space. Gave up after several tries."
