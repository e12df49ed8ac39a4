"""Liveness is not progress (issue 16.1): a stage whose work stops moving (a step that hangs
on a judge, a storage read or a rollout that never returns) loses its lease and is stopped,
then handed to another worker, and failed with the reason after its last attempt; a stage
that runs past the time limit its run's budget sets is stopped and fails. Stages run here
in the test's main thread, as in a worker, on the real Postgres and Redis of the test
stack; the hung call is a wait far longer than the stall time."""

import base64
import json
import threading
import time
import uuid

import pytest
import redis
from django.conf import settings

from corpora.services import project_create
from runs import stage
from runs.models import Run, RunEvent
from runs.presets import preset_config

pytestmark = pytest.mark.django_db(transaction=True)

HUNG_CALL_SECONDS = 60  # "never returns", as far as these tests are concerned


@pytest.fixture(autouse=True)
def quick_leases(knob):
    knob("SLEUTH_RUN_LEASE_SECONDS", 4)
    knob("SLEUTH_RUN_STALL_SECONDS", 2.0)


@pytest.fixture
def train_queue(knob):
    """The training queue, private to the test: what the stage queues again is read here."""
    name = f"test-liveness-{uuid.uuid4().hex[:8]}"
    knob("SLEUTH_TRAIN_QUEUE", name)
    yield name
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(name)


def queued_tasks(queue: str) -> list[tuple[str, list]]:
    tasks = []
    for raw in redis.Redis.from_url(settings.CELERY_BROKER_URL).lrange(queue, 0, -1):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        tasks.append((message["headers"]["task"], args))
    return tasks


def make_run(user, **config) -> Run:
    project = project_create(owner=user, name="Filings")
    return Run.objects.create(
        project=project,
        created_by=user,
        name="Run",
        config={**preset_config("quick-cpu").to_dict(), **config},
        status=Run.Status.TRAINING,
    )


def train_stage(run: Run, work) -> Run | None:
    return stage.run_stage(
        run.pk, [Run.Status.TRAINING], Run.Status.TRAINING, work, progress_hooks=True
    )


def hung_step(returned: list):
    """A stage that does some work, then waits on a call that does not come back."""

    def work(run, heartbeat):
        heartbeat.progress()
        threading.Event().wait(HUNG_CALL_SECONDS)
        returned.append(True)

    return work


def test_a_step_that_hangs_is_stopped_and_the_run_queued_for_another_worker(alice, train_queue):
    run = make_run(alice)
    returned = []

    train_stage(run, hung_step(returned))

    assert not returned  # the hung call was interrupted, not waited out
    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING and run.lease_owner == ""
    warning = run.events.filter(kind=RunEvent.Kind.WARNING).last()
    assert "made no progress" in warning.message
    assert ("config.tasks.run_train", [run.pk]) in queued_tasks(train_queue)


def test_a_run_whose_step_hangs_on_its_last_attempt_fails_with_the_reason(alice, train_queue):
    run = make_run(alice)
    Run.objects.filter(pk=run.pk).update(attempts=settings.SLEUTH_RUN_MAX_ATTEMPTS - 1)

    train_stage(run, hung_step([]))

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "made no progress" in run.status_reason
    assert f"{settings.SLEUTH_RUN_MAX_ATTEMPTS} times in a row" in run.status_reason
    assert run.lease_owner == ""


def test_a_stage_that_keeps_making_progress_keeps_its_lease_and_records_progress(alice):
    run = make_run(alice)
    claimed_progress = []

    def work(run, heartbeat):
        claimed_progress.append(Run.objects.get(pk=run.pk).progress_at)
        deadline = time.monotonic() + 6  # three stall times, one progress write
        while time.monotonic() < deadline:
            heartbeat.progress()
            time.sleep(0.2)
        assert heartbeat.interrupted is None and not heartbeat.should_stop()

    train_stage(run, work)

    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING and run.lease_owner  # still held
    assert not run.events.filter(message__contains="no progress").exists()
    assert claimed_progress[0] is not None and run.progress_at > claimed_progress[0]


def test_a_stage_past_the_time_limit_its_budget_sets_fails_the_run(alice, knob):
    knob("SLEUTH_RUN_STAGE_MIN_SECONDS", 1.0)
    run = make_run(alice, max_minutes=0.05)  # a 3-second budget: training may take 3 s
    returned = []

    def work(run, heartbeat):  # busy, making progress, but never done in time
        for _ in range(HUNG_CALL_SECONDS * 5):
            heartbeat.progress()
            time.sleep(0.2)
        returned.append(True)

    train_stage(run, work)

    assert not returned
    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert "time limit of 3 seconds" in run.status_reason
    assert "budget" in run.status_reason
