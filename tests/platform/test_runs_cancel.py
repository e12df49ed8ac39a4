"""Cancel acts within seconds, in the middle of a training step (issue 16.1): the worker
checks the run's cancel flag between decoded tokens, rollout rounds and micro-batches, not
only between steps. A real Celery worker whose device is slow (slow_device_worker.py: a
second per decoded token, so one step takes far longer than the cancel may) trains a tiny
run; it is cancelled while its first step decodes."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corpora.services import project_create
from runs.models import Run, RunMetric
from runs.services import run_cancel, run_create
from tests.helpers.runs import TINY_OPTIONS, upload_corpus, upload_questions
from tests.helpers.toy import tiny_model_folder

REPO_ROOT = Path(__file__).resolve().parents[2]
QUEUES = {"SLEUTH_INGEST_QUEUE": "ingest-cancel", "SLEUTH_TRAIN_QUEUE": "train-cancel"}
CANCEL_WITHIN_SECONDS = 15  # one step here takes tens of seconds


def start_slow_worker(log: Path, marker: Path) -> subprocess.Popen:
    from django.db import connection

    database = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    env = {
        **os.environ,
        **QUEUES,
        "SLEUTH_TEST_DECODING_MARKER": str(marker),
        "DATABASE_URL": database,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
    }
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("slow_device_worker.py"))]
        + ["-A", "config", "worker", "--pool", "solo", "-Q", ",".join(QUEUES.values())]
        + ["-n", "slow@%h", "-l", "INFO"],
        env=env,
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(condition, timeout: float, what) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what()
        time.sleep(0.1)


@pytest.mark.django_db(transaction=True)
def test_a_run_cancelled_in_the_middle_of_a_step_ends_cancelled_within_seconds(
    celery_worker, alice, tmp_path, knob, settings
):
    model = tiny_model_folder(tmp_path)
    knob("SLEUTH_ALLOWED_MODELS", ["default", model])
    for key, value in QUEUES.items():
        knob(key, value)
    log, marker = tmp_path / "worker.log", tmp_path / "decoding"
    worker = start_slow_worker(log, marker)
    try:
        project = project_create(owner=alice, name="Toy filings")
        upload_corpus(project)  # parsed by the suite's worker, on the usual ingest queue
        run = run_create(
            project=project,
            user=alice,
            name="cancelled",
            question_set=upload_questions(project),
            preset="quick-cpu",
            options={**TINY_OPTIONS, "steps": 3, "model": model},
        )
        wait_for(marker.exists, 300, lambda: f"no step began:\n{log.read_text()[-3000:]}")

        run_cancel(run=run, user=alice)
        cancelled_at = time.monotonic()
        wait_for(
            lambda: Run.objects.get(pk=run.pk).status in Run.FINISHED,
            120,  # an old worker finishes the step first
            lambda: f"still {Run.objects.get(pk=run.pk).status}:\n{log.read_text()[-3000:]}",
        )

        run.refresh_from_db()
        assert run.status == Run.Status.CANCELLED, run.status_reason
        assert time.monotonic() - cancelled_at < CANCEL_WITHIN_SECONDS
        assert not RunMetric.objects.filter(run=run).exists()  # the step was dropped
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
