"""Workers on machines that share no disk (issue 16, the many-machines case): a run is
prepared on one, trained on another, and resumed on the first after the second is killed.
Each worker has its own scratch folder; only Postgres, Redis and S3 are shared."""

import os
import signal
import subprocess

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

INGEST, TRAIN = QUEUES["SLEUTH_INGEST_QUEUE"], QUEUES["SLEUTH_TRAIN_QUEUE"]


def took_up_by(run) -> list[int]:
    """The pids of the workers the run's events say took it up, in order: "Preparing on
    <host>:<pid>:<claim>.", "Resumed training on …"."""
    return [
        int(e.message.split(" on ", 1)[1].split(":")[1])
        for e in run.events.order_by("pk")
        if " on " in e.message and e.message.split(" on ", 1)[1].count(":") >= 2
    ]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_run_prepared_on_one_machine_trained_on_another_resumes_on_the_first(
    celery_worker, alice, tmp_path, knob, settings
):
    model = tiny_model_folder(tmp_path)
    knob("SLEUTH_ALLOWED_MODELS", ["default", model])
    for key, value in QUEUES.items():
        knob(key, value)
    disk_a, disk_b = tmp_path / "machine-a", tmp_path / "machine-b"
    workers = []

    def machine(name: str, queues: list[str], disk) -> subprocess.Popen:
        worker = start_worker(name, tmp_path / f"{name}.log", queues=queues, work_dir=disk)
        workers.append(worker)
        return worker

    try:
        project = project_create(owner=alice, name="Toy filings")
        upload_corpus(project)  # parsed by the suite's worker, on the usual ingest queue
        question_set = upload_questions(project)
        preparer = machine("machine-a", [INGEST], disk_a)  # prepares and publishes only
        trainer = machine("machine-b", [TRAIN], disk_b)
        run = run_create(
            project=project,
            user=alice,
            name="two machines",
            question_set=question_set,
            preset="quick-cpu",
            options={
                **TINY_OPTIONS,
                "steps": 40,
                "hold_back_after": 10_000,
                "save_every": 3,
                "model": model,
            },
        )
        wait_for(
            lambda: Checkpoint.objects.filter(run=run).exists(),
            300,
            f"no checkpoint:\n{(tmp_path / 'machine-b.log').read_text()[-3000:]}",
        )
        os.killpg(trainer.pid, signal.SIGKILL)
        trainer.wait()
        # Machine A takes the training queue too: it resumes from the checkpoint on S3, as
        # it has none of machine B's files.
        resumer = machine("machine-a-trains", [INGEST, TRAIN], disk_a)
        run = finished(run, timeout=600)

        assert run.status == "succeeded", run.status_reason
        steps = list(RunMetric.objects.filter(run=run).values_list("step", flat=True))
        assert steps == list(range(1, 41))
        took = took_up_by(run)
        assert took[0] == preparer.pid  # "Preparing on" machine A
        assert took[-1] == resumer.pid  # "Resumed training on" machine A, after B's death
        assert "config.tasks.run_train" in (tmp_path / "machine-b.log").read_text()
        assert any(
            e.message.startswith("Resuming from the checkpoint at step") for e in run.events.all()
        )
        # Each machine wrote only its own disk: B's training files never reached A's.
        assert not any(
            p.name.startswith("run-") and "machine-b" in p.name for p in disk_a.iterdir()
        )
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(worker.pid, signal.SIGKILL)
