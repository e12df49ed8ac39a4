"""Issue 69's goal, with stand-in workers: a run that asks for 2 GPUs on a platform with only
a CPU worker waits, its page saying what for, and is taken as soon as a worker that
advertises 2 GPUs connects. The workers are real Celery worker processes on the real broker,
database and store; SLEUTH_WORKER_DEVICES names their devices (the "GPU" worker trains the
suite's tiny model on this machine's CPU), and a preset stands in for one that needs 2 GPUs."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpora.services import project_create
from engine.devices import Needs
from runs.models import Run
from runs.presets import PRESETS
from runs.services import run_create
from tests.helpers.runs import TINY_OPTIONS, finished, upload_corpus, upload_questions, wait_for
from tests.helpers.toy import tiny_model_folder

REPO_ROOT = Path(__file__).resolve().parents[2]
INGEST, TRAIN = "ingest-kinds", "train-kinds"
WAITING = "Waiting for a worker with 2 GPUs (none connected)."


def start_worker(name: str, log: Path, queues: list[str], devices: str) -> subprocess.Popen:
    """A worker on this test's queues that holds `devices` (SLEUTH_WORKER_DEVICES); it sweeps
    and announces its queues every 2 s, with 6 s leases."""
    from django.db import connection

    database = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    env = {
        **os.environ,
        "SLEUTH_INGEST_QUEUE": INGEST,
        "SLEUTH_TRAIN_QUEUE": TRAIN,
        "SLEUTH_WORKER_DEVICES": devices,
        "SLEUTH_RUN_LEASE_SECONDS": "6",
        "SLEUTH_RUN_SWEEP_SECONDS": "2",
        "DATABASE_URL": database,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo"]
        + ["-Q", ",".join(queues), "-n", f"{name}@%h", "-l", "INFO"],
        env=env,
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def on_worker(run: Run, verb: str) -> int:
    """The pid of the worker the run's events say did `verb` ("Training", "Evaluating")."""
    (message,) = [m for m in run.events.values_list("message", flat=True) if m.startswith(verb)]
    return int(message.split(" on ", 1)[1].split(":")[1])


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_that_needs_two_gpus_waits_with_its_reason_until_a_two_gpu_worker_takes_it(
    celery_worker, alice, client, tmp_path, knob, monkeypatch
):
    model = tiny_model_folder(tmp_path)
    knob("SLEUTH_ALLOWED_MODELS", ["default", model])
    knob("SLEUTH_INGEST_QUEUE", INGEST)
    knob("SLEUTH_TRAIN_QUEUE", TRAIN)
    monkeypatch.setitem(PRESETS["quick-cpu"], "needs", Needs("gpu", 2))  # the stand-in preset
    client.force_login(alice)
    logs = {name: tmp_path / f"{name}.log" for name in ("cpu", "gpu")}
    workers = []
    try:
        # The platform has one worker, a CPU one that prepares, trains CPU runs and publishes.
        workers.append(start_worker("cpu", logs["cpu"], [INGEST, TRAIN], devices="cpu"))
        project = project_create(owner=alice, name="Toy filings")
        upload_corpus(project)  # parsed by the suite's worker, on the usual ingest queue
        run = run_create(
            project=project,
            user=alice,
            name="two gpus",
            question_set=upload_questions(project),
            preset="quick-cpu",
            options={**TINY_OPTIONS, "model": model},
        )
        assert Run.objects.get(pk=run.pk).needs == Needs("gpu", 2).to_dict()

        def page() -> str:
            return client.get(f"/runs/{run.pk}/live/").content.decode()

        wait_for(
            lambda: WAITING in page(), 120, f"no reason shown:\n{logs['cpu'].read_text()[-3000:]}"
        )
        time.sleep(15)  # past two leases: the sweep queued it again, nothing failed it
        run.refresh_from_db()
        assert (run.status, run.lease_owner) == (Run.Status.TRAINING, "")
        assert WAITING in page()
        assert "No worker with 2 GPUs is connected; the run waits for one." in (
            run.events.values_list("message", flat=True)
        )
        assert "config.tasks.run_train[" not in logs["cpu"].read_text()  # never received

        # A worker that advertises 2 GPUs connects, on the train queue only.
        gpu = start_worker("gpu", logs["gpu"], [TRAIN], devices="gpu:2")
        workers.append(gpu)
        run = finished(run, timeout=600)

        assert run.status == Run.Status.SUCCEEDED, (
            run.status_reason + "\n" + logs["gpu"].read_text()[-3000:]
        )
        assert on_worker(run, "Training") == on_worker(run, "Evaluating") == gpu.pid
        assert any(m.endswith("(2 GPUs).") for m in run.events.values_list("message", flat=True))
        assert "config.tasks.run_train[" not in logs["cpu"].read_text()  # never received
        assert f"consumes {TRAIN}, {TRAIN}-gpu1, {TRAIN}-gpu2" in logs["gpu"].read_text()
        # One training process a GPU (gloo here): rank 1 trained to the end beside rank 0.
        assert run.config["ranks"] == 2
        assert f"run {run.pk}: training on 2 ranks" in logs["gpu"].read_text()
        assert WAITING not in page()
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
