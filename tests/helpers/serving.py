"""A tiny agent trained and published by a real run, and real Celery workers that train and
serve it (tests/platform/test_api_chat.py, test_playground.py, test_api_whole_flow.py,
tests/browser/test_playground_page.py, test_issue15_walk.py; the fixtures are in
tests/conftest.py)."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

from django.utils import timezone

from corpora.services import project_create
from runs.models import Checkpoint, Run
from tests.helpers.runs import REPO_ROOT, TINY_OPTIONS

# A cold start long enough for the tiny model to learn to search (test_training_rl), then
# one RL step: the run takes about a minute.
TRAINED_TO_SEARCH = {
    **TINY_OPTIONS,
    "steps": 1,
    "sft_epochs": 150,
    "sft_lr": 3e-3,
    "lr": 1e-4,
    "scope_drills": 0,
}


def answers(app, node: str) -> bool:
    """Whether the worker `node` answers a ping. A broker connection this process pooled
    before a test restarted Redis (test_runs_service_restarts.py) fails once, then is
    opened again: that is "not yet", not a worker that failed to start."""
    import kombu.exceptions
    import redis.exceptions

    try:
        return bool(app.control.ping(destination=[node], timeout=0.5))
    except (OSError, redis.exceptions.RedisError, kombu.exceptions.OperationalError):
        return False


@contextmanager
def worker(name: str, queues: str, pool: str, log_path: Path, **env_extra: str):
    """A real Celery worker process on the real broker, using the test database."""
    from django.db import connection

    from config.celery import app

    env = {
        **os.environ,
        "DATABASE_URL": os.environ["DATABASE_URL"].rsplit("/", 1)[0]
        + "/"
        + connection.settings_dict["NAME"],
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
        **env_extra,
    }
    node = f"{name}-{os.getpid()}@localhost"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "-Q", queues]
            + ["--pool", pool, "--concurrency", "2", "-n", node, "-l", "INFO"],
            env=env,
            cwd=REPO_ROOT,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        process.log_path = log_path  # for a failing test to show what the worker did
        try:
            deadline = time.monotonic() + 60
            while not answers(app, node):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{name} worker did not start:\n{log_path.read_text()}")
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()


# The run's stages go to queues of their own, served by a worker whose operator allowlist
# holds the tiny model (workers check it again before loading one).
RUN_QUEUES = {
    "SLEUTH_INGEST_QUEUE": "serving-test-ingest",
    "SLEUTH_TRAIN_QUEUE": "serving-test-train",
}


def publish_for(owner, trained: dict) -> str:
    """`owner` gets the trained agent as their own published run; returns its name."""
    project = project_create(owner=owner, name="Toy filings")
    run = Run.objects.create(
        project=project,
        created_by=owner,
        name="tiny",
        status=Run.Status.SUCCEEDED,
        index_prefix=trained["index_prefix"],
        finished_at=timezone.now(),
    )
    Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=f"{trained['published_prefix']}/unused",
        is_final=True,
        published_prefix=trained["published_prefix"],
    )
    return trained["name"]


QUESTION = "what was acme revenue in 2021 ?"


@contextmanager
def inference_worker_running(django_db_blocker, tmp_path_factory, **env_extra: str):
    """A real Celery worker on the "inference" queue, threads sharing one agent cache."""
    folder = tmp_path_factory.mktemp("inference")
    with (
        django_db_blocker.unblock(),
        worker(
            "test-inference",
            "inference",
            "threads",
            folder / "worker.log",
            SLEUTH_WORK_DIR=str(folder / "work"),
            **env_extra,
        ) as process,
    ):
        yield process
