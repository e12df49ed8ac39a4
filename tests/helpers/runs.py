"""A run on the real services: the toy corpus and questions uploaded to a project, the tiny
options a run trains with in seconds, and Celery workers of a test's own on queues of its own
(tests/platform/test_runs_*.py, test_api_chat.py, test_routing_workers.py)."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from corpora.models import Document
from corpora.services import document_set_entity, document_upload, question_set_import
from runs.models import Checkpoint, Run
from tests.helpers.toy import FACTS, FILLER

# Set while this process's suite worker (tests/conftest.py, celery_worker) runs: a test that
# ends while it may still work on the test's data waits for it (tests/browser/conftest.py).
WORKER_RUNNING = "SLEUTH_TEST_WORKER_PID"

REPO_ROOT = Path(__file__).resolve().parents[2]


TINY_OPTIONS = {
    "steps": 2,
    "questions_per_step": 2,
    "group_size": 2,
    "sft_epochs": 0,
    "lr": 1e-3,
    "save_every": 1,
    "eval_every": 0,
    "max_batch_tokens": 2048,
    "samples_logged": 1,
    "limits": {
        "max_turns": 2,
        "max_new_tokens": 24,
        "max_result_tokens": 120,
        "results_per_search": 1,
    },
}


def upload_corpus(project) -> None:
    for entity, (year, metric, value) in FACTS.items():
        text = f"{entity} {year} {metric} was {value} .\n\n{FILLER}\n"
        document = document_upload(
            project=project, file=SimpleUploadedFile(f"{entity}.txt", text.encode())
        )
        document_set_entity(document=document, entity=entity)
    deadline = time.monotonic() + 120
    while project.documents.filter(status=Document.Status.UPLOADED).exists():
        assert time.monotonic() < deadline, "documents were not parsed"
        time.sleep(0.25)


def upload_questions(project):
    lines = [
        json.dumps(
            {
                "question": f"what was {entity} {metric} in {year} ?",
                "answer": value,
                "entity": entity,
                "evidence": [{"text": f"{metric} was {value}", "doc": f"{entity}.txt"}],
            }
        )
        for entity, (year, metric, value) in FACTS.items()
    ]
    body = ("\n".join(lines) + "\n").encode()
    return question_set_import(project=project, file=SimpleUploadedFile("qa.jsonl", body))


def finished(run: Run, timeout: float = 600) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in Run.FINISHED:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run still {run.status} after {timeout}s")


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


def published_run(project, owner, *, index_prefix: str, slug: str) -> Run:
    """A succeeded run of `project` searching `index_prefix`, with a final checkpoint
    published under `slug` (nothing is written to S3: a test gives it the files it needs)."""
    run = Run.objects.create(
        project=project,
        created_by=owner,
        name="first",
        status=Run.Status.SUCCEEDED,
        index_prefix=index_prefix,
        finished_at=timezone.now(),
    )
    Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=f"projects/{project.pk}/runs/{run.pk}/checkpoints/final",
        is_final=True,
        published_prefix=f"projects/{project.pk}/runs/{run.pk}/published/{slug}",
    )
    return run
