"""Routing by worker kind (issue 69) on the real services (Postgres, Redis as broker and
cache): a run's training goes to the queue its needs name, a worker consumes the queues its
devices hold, a worker that claims a run it cannot hold hands it back, and a run that needs
GPUs no connected worker has waits for them, saying so on its page and in the API, instead
of failing after SLEUTH_RUN_MAX_REQUEUES. Real worker processes: test_routing_workers.py."""

import base64
import json
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.utils import timezone

from core.queues import enqueue, task_queue
from corpora.services import project_create
from engine.devices import Devices, Needs
from engine.training.config import TrainConfig
from runs import pipeline, routing, sweep
from runs.models import Run, RunEvent
from runs.presets import PRESETS
from runs.services import RunRejected, run_create
from runs.stage import StageFailed, stage_enqueue
from serving.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

TWO_GPUS = Needs("gpu", 2)
WAITING = "Waiting for a worker with 2 GPUs (none connected)."


@pytest.fixture
def queues(knob):
    """Queues of this test's own for the run stages (no worker serves them), emptied after."""
    name = f"test-routing-{uuid.uuid4().hex[:8]}"
    knob("SLEUTH_INGEST_QUEUE", f"{name}-ingest")
    knob("SLEUTH_TRAIN_QUEUE", name)
    yield name
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    client.delete(f"{name}-ingest", name, *(f"{name}-gpu{n}" for n in range(1, 9)))


def queued(queue: str) -> list[tuple[str, list]]:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    tasks = []
    for raw in client.lrange(queue, 0, -1):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        tasks.append((message["headers"]["task"], args))
    return tasks


def waiting_run(alice, needs: Needs = TWO_GPUS, status=Run.Status.TRAINING) -> Run:
    """A run its preparation handed to training, whose task no worker took (deadline past)."""
    project = project_create(owner=alice, name="Filings")
    return Run.objects.create(
        project=project,
        created_by=alice,
        name="big",
        preset="quick-cpu",
        needs=needs.to_dict(),
        status=status,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )


def test_a_runs_training_and_evaluation_go_to_the_queue_its_needs_name(queues):
    enqueue("config.tasks.run_train", args=[7], needs=TWO_GPUS)
    enqueue("config.tasks.run_evaluate", args=[7], needs=Needs("gpu", 1))
    enqueue("config.tasks.run_train", args=[8], needs=Needs("cpu", memory_gib=8))
    enqueue("config.tasks.run_prepare", args=[7], needs=TWO_GPUS)  # preparing runs anywhere

    assert queued(f"{queues}-gpu2") == [("config.tasks.run_train", [7])]
    assert queued(f"{queues}-gpu1") == [("config.tasks.run_evaluate", [7])]
    assert queued(queues) == [("config.tasks.run_train", [8])]
    assert queued(f"{queues}-ingest") == [("config.tasks.run_prepare", [7])]
    assert task_queue("config.tasks.run_train", TWO_GPUS) == f"{queues}-gpu2"


def test_a_stage_is_queued_where_the_runs_recorded_needs_say(queues, alice):
    big, small = waiting_run(alice), waiting_run(alice, needs=Needs())
    old = waiting_run(alice, status=Run.Status.EVALUATING)
    Run.objects.filter(pk=old.pk).update(needs={})  # recorded before runs had needs
    old.refresh_from_db()

    for run in (big, small, old):
        stage_enqueue(run)

    assert queued(f"{queues}-gpu2") == [("config.tasks.run_train", [big.pk])]
    assert sorted(queued(queues)) == [
        ("config.tasks.run_evaluate", [old.pk]),
        ("config.tasks.run_train", [small.pk]),
    ]


def test_a_run_records_what_its_preset_needs(queues, project, alice):
    run = run_create(
        project=project, user=alice, name="gpu", question_set=None, preset="standard-gpu"
    )

    assert Needs.from_dict(Run.objects.get(pk=run.pk).needs) == Needs("gpu", 1, memory_gib=22)


def test_a_run_trains_in_one_process_a_gpu_it_needs_and_no_customer_sets_more(
    queues, project, alice, monkeypatch
):
    monkeypatch.setitem(PRESETS["quick-cpu"], "needs", TWO_GPUS)
    run = run_create(project=project, user=alice, name="two", question_set=None)
    assert Run.objects.get(pk=run.pk).config["ranks"] == 2

    monkeypatch.setitem(PRESETS["quick-cpu"], "needs", Needs())
    with pytest.raises(RunRejected, match="trains in 1 process"):
        run_create(
            project=project, user=alice, name="many", question_set=None, options={"ranks": 8}
        )
    # Settings edited in the database past what the worker was chosen for are refused.
    cpu = waiting_run(alice, needs=Needs())
    with pytest.raises(StageFailed, match="ask for 4 training processes"):
        pipeline.allowed_ranks(cpu, TrainConfig(ranks=4))
    assert pipeline.allowed_ranks(waiting_run(alice), TrainConfig(ranks=2)) == 2


@pytest.mark.parametrize(
    ("consumed", "devices", "takes_cpu_runs", "added", "dropped"),
    [
        (["ingest", "train"], Devices(), True, [], []),  # a CPU worker: as started
        (["train"], Devices(gpus=2), True, ["train-gpu1", "train-gpu2"], []),
        (["train"], Devices(gpus=1), False, ["train-gpu1"], ["train"]),  # GPUs kept for GPU runs
        (["train"], Devices(), False, [], []),  # a CPU worker always takes CPU runs
        (["ingest"], Devices(gpus=2), True, [], []),  # not a training worker
        (["inference"], Devices(gpus=1), True, [], []),
        (["train", "train-gpu1"], Devices(gpus=2), True, ["train-gpu2"], []),
    ],
)
def test_a_training_worker_consumes_the_queues_its_devices_hold(
    settings, consumed, devices, takes_cpu_runs, added, dropped
):
    settings.SLEUTH_TRAIN_QUEUE = "train"
    settings.SLEUTH_WORKER_TAKES_CPU_RUNS = takes_cpu_runs

    assert routing.worker_queues_adjust(consumed, devices) == (added, dropped)


def test_a_worker_that_claims_a_run_it_cannot_hold_hands_it_back(queues, alice, monkeypatch):
    """Without counting an attempt (the run must not fail for a worker's mistake), without
    queueing it at once (the sweep does, at its deadline), with the reason once."""
    monkeypatch.setattr(routing, "worker_devices", lambda: Devices(memory_gib=16))
    run = waiting_run(alice)

    for _ in range(3):
        assert pipeline.run_train(run_id=run.pk) is None

    run.refresh_from_db()
    assert (run.status, run.lease_owner, run.attempts) == (Run.Status.TRAINING, "", 0)
    assert run.lease_expires_at > timezone.now()  # a pick-up deadline for the sweep
    (event,) = run.events.filter(kind=RunEvent.Kind.WARNING)
    assert event.message.endswith(
        "cannot take this run: it has no GPU; the run needs 2 GPUs. Handed back; it waits "
        "for a worker with 2 GPUs."
    )
    assert queued(f"{queues}-gpu2") == []


def test_a_worker_short_of_gpu_memory_hands_the_run_back_too(queues, alice, monkeypatch):
    monkeypatch.setattr(routing, "worker_devices", lambda: Devices(gpus=2, gpu_memory_gib=24))
    run = waiting_run(alice, needs=Needs("gpu", 2, memory_gib=40), status=Run.Status.EVALUATING)

    assert pipeline.run_evaluate(run_id=run.pk) is None

    assert "its GPUs have 24 GiB each; the run needs 40 GiB each" in (
        run.events.get(kind=RunEvent.Kind.WARNING).message
    )


def test_preparing_runs_on_any_worker_whatever_the_run_needs(alice, monkeypatch):
    monkeypatch.setattr(routing, "worker_devices", lambda: Devices())
    run = waiting_run(alice, status=Run.Status.PREPARING)

    assert routing.worker_refusal(run) is None


def test_a_run_waiting_for_gpus_is_never_failed_for_want_of_a_worker(queues, alice):
    run = waiting_run(alice)

    for _ in range(settings.SLEUTH_RUN_MAX_REQUEUES + 2):
        assert sweep.runs_sweep() == [run.pk]
        Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())

    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING and run.requeues == 0
    assert len(queued(f"{queues}-gpu2")) == settings.SLEUTH_RUN_MAX_REQUEUES + 2
    messages = list(run.events.values_list("message", flat=True))
    assert messages == ["No worker with 2 GPUs is connected; the run waits for one."]


def test_a_cpu_run_on_a_queue_no_worker_serves_still_fails_after_a_few_requeues(queues, alice):
    """The rule stays for every other wait: no CPU training worker at all is a platform
    missing its workers (test_runs_stranded covers the rest)."""
    run = waiting_run(alice, needs=Needs())

    for _ in range(settings.SLEUTH_RUN_MAX_REQUEUES + 1):
        sweep.runs_sweep()
        Run.objects.filter(pk=run.pk).update(lease_expires_at=timezone.now())

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert run.status_reason.startswith(f"No worker serves queue {queues}")


def test_the_run_page_and_the_api_say_what_the_run_waits_for(queues, alice, client):
    run = waiting_run(alice)
    client.force_login(alice)
    _, token = api_token_create(user=alice, name="tests")

    def page() -> str:
        return client.get(f"/runs/{run.pk}/live/").content.decode()

    def job() -> dict:
        response = client.get(
            f"/v1/fine_tuning/jobs/ftjob-{run.pk}", HTTP_AUTHORIZATION=f"Bearer {token}"
        )
        assert response.status_code == 200, response.content
        return response.json()["sleuth"]

    assert WAITING in page()
    assert job()["waiting_for"] == WAITING

    # A worker with 2 GPUs connects (its sweep thread announces its queues): the run only
    # waits its turn now, and the page says no more.
    sweep.queues_announce([f"{queues}-gpu1", f"{queues}-gpu2"], ttl_seconds=60)
    assert WAITING not in page() and 'id="run-waiting"' not in page()
    assert job()["waiting_for"] is None


def test_a_run_held_by_a_worker_waits_for_nothing(queues, alice):
    run = waiting_run(alice)
    Run.objects.filter(pk=run.pk).update(lease_owner="gpu-host:1:abc")
    run.refresh_from_db()

    assert routing.run_waiting_for(run) == ""
