"""A worker killed with SIGKILL mid-training: another worker takes the run over when the
lease expires and resumes it from the last checkpoint on S3, with every metric step once."""

import os
import signal
import subprocess
from pathlib import Path

import pytest

from corpora.services import project_create
from runs.models import Checkpoint, RunMetric
from runs.services import run_create
from tests.helpers.runs import (
    QUEUES,
    TINY_OPTIONS,
    finished,
    start_worker,
    upload_corpus,
    upload_questions,
    wait_for,
)
from tests.helpers.toy import tiny_model_folder

REPO_ROOT = Path(__file__).resolve().parents[2]


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
