"""A worker killed with SIGKILL mid-training: another worker takes the run over when the
lease expires and resumes it from the last checkpoint on S3, with every metric step once."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_runs_pipeline import (
    TINY_OPTIONS,
    finished,
    tiny_model_folder,
    upload_corpus,
    upload_questions,
)

from corpora.services import project_create
from runs.models import Checkpoint, RunMetric
from runs.services import run_create

REPO_ROOT = Path(__file__).resolve().parents[2]
# Queues of their own, so only this test's workers take this run.
QUEUES = {"SLEUTH_INGEST_QUEUE": "ingest-resume", "SLEUTH_TRAIN_QUEUE": "train-resume"}
LEASE = {"SLEUTH_RUN_LEASE_SECONDS": "6", "SLEUTH_RUN_SWEEP_SECONDS": "2"}


def start_worker(
    name: str, log: Path, queues: list[str] | None = None, work_dir: Path | None = None
) -> subprocess.Popen:
    """A Celery worker process on this test's queues (or `queues` of them), with its own
    scratch folder when `work_dir` is given (a machine of its own, sharing no disk)."""
    from django.db import connection

    database = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    env = {
        **os.environ,
        **QUEUES,
        **LEASE,
        **({"SLEUTH_WORK_DIR": str(work_dir)} if work_dir else {}),
        "DATABASE_URL": database,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
    }
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo"]
        + ["-Q", ",".join(queues or QUEUES.values()), "-n", f"{name}@%h", "-l", "INFO"],
        env=env,
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_worker_is_killed_resumes_on_another_from_its_last_checkpoint(
    celery_worker, alice, tmp_path, knob, settings
):
    model = tiny_model_folder(tmp_path)
    knob("SLEUTH_ALLOWED_MODELS", ["default", model])  # the operator's allowlist, plus it
    for key, value in QUEUES.items():
        knob(key, value)
    first = start_worker("first", tmp_path / "first.log")
    second = None
    try:
        project = project_create(owner=alice, name="Toy filings")
        upload_corpus(project)  # parsed by the suite's worker, on the usual ingest queue
        question_set = upload_questions(project)
        run = run_create(
            project=project,
            user=alice,
            name="killed",
            question_set=question_set,
            preset="quick-cpu",
            options={
                **TINY_OPTIONS,
                "steps": 40,
                "hold_back_after": 10_000,  # a random model never answers: keep asking
                "save_every": 3,
                "model": model,
            },
        )
        wait_for(
            lambda: Checkpoint.objects.filter(run=run).exists(),
            300,
            f"no checkpoint:\n{(tmp_path / 'first.log').read_text()[-3000:]}",
        )
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        killed_at = Checkpoint.objects.filter(run=run).order_by("-step").first().step
        run.refresh_from_db()
        assert run.status == "training" and run.current_step < 40

        second = start_worker("second", tmp_path / "second.log")
        run = finished(run, timeout=600)

        assert run.status == "succeeded", run.status_reason
        steps = list(RunMetric.objects.filter(run=run).values_list("step", flat=True))
        messages = [e.message for e in run.events.all()]
        assert steps == list(range(1, 41)), messages
        messages = [e.message for e in run.events.all()]
        assert any("stopped responding" in m for m in messages)
        resumed = [m for m in messages if m.startswith("Resuming from the checkpoint at step")]
        assert resumed and int(resumed[0].rsplit(" ", 1)[1].rstrip(".")) >= killed_at
        takeover = [m for m in messages if m.startswith("Resumed training on")]
        assert takeover and f":{first.pid}:" not in takeover[-1]
    finally:
        for worker in (first, second):
            if worker and worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
