"""Fixtures shared by the whole suite. The services themselves come from devstack.pytest_plugin."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATASETS = REPO_ROOT.parent / "shared" / "datasets"
ARTIFACTS = REPO_ROOT / "test-artifacts"

# Playwright's sync API runs an event loop in the test thread; Django would then refuse ORM
# calls made by the test itself. Tests only: the server side is unaffected.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


@pytest.fixture(scope="session")
def tiny_model_path(tmp_path_factory) -> Path:
    """Where the suite's tiny model folder lives (built by the `tiny_model` fixture)."""
    return tmp_path_factory.getbasetemp() / "suite-models" / "tiny-model"


@pytest.fixture(scope="session")
def tiny_model(tiny_model_path) -> str:
    """The tiny randomly initialized model that runs in the suite train, as a model folder.
    The suite's worker (celery_worker) has it on its operator allowlist; a test that starts a
    run with it puts it on this process's list too (knob("SLEUTH_ALLOWED_MODELS", …))."""
    from tests.helpers.toy import tiny_model_folder

    if not tiny_model_path.exists():
        tiny_model_path.parent.mkdir(parents=True, exist_ok=True)
        assert tiny_model_folder(tiny_model_path.parent) == str(tiny_model_path)
    return str(tiny_model_path)


@pytest.fixture(scope="session")
def celery_worker(django_db_setup, django_db_blocker, tiny_model_path):
    """A real Celery worker process on the real broker, using the test database. Its operator
    allowlist is the test settings' one plus the suite's tiny model (workers check a run's
    model against it again before loading it)."""
    from django.db import connection

    from runs.services import allowed_models

    with django_db_blocker.unblock():
        database_name = connection.settings_dict["NAME"]
    database_url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + database_name
    env = {
        **os.environ,
        "SLEUTH_ALLOWED_MODELS": ",".join([*allowed_models(), str(tiny_model_path)]),
        "DATABASE_URL": database_url,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONUNBUFFERED": "1",
        # No background sweep: it would take up the runs of tests that start workers of their
        # own (their queues, their allowlist) and requeue them onto this worker's queues, where
        # its allowlist refuses their model. Tests that exercise the sweep call it themselves
        # or start their own workers, which sweep.
        "SLEUTH_RUN_SWEEP_SECONDS": "0",
        # Source roots, so apps added after the editable install are importable too.
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
    }
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"sleuth-test-worker-{os.getpid()}.log"
    log = open(log_path, "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "ingest,train",
            "--pool",
            "solo",
            "-n",
            f"test-worker-{os.getpid()}@%h",
            "-l",
            "INFO",
        ],
        env=env,
        cwd=REPO_ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    from config.celery import app

    deadline = time.monotonic() + 60
    while not app.control.ping(timeout=0.5):
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"Celery worker did not start:\n{log_path.read_text()[-3000:]}")
    from tests.helpers.runs import WORKER_RUNNING

    os.environ[WORKER_RUNNING] = str(process.pid)
    yield process
    os.environ.pop(WORKER_RUNNING, None)
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
    log.close()


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's chromium: Playwright cannot download its own browsers here."""
    executable = "/usr/bin/chromium"
    if not Path(executable).exists():
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI: `make test` should have installed it")
        pytest.skip("chromium is not installed (apt-get install chromium, or run `make test`)")
    return {
        **browser_type_launch_args,
        "executable_path": executable,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
        ],
    }


@pytest.fixture
def screenshot(page, request):
    """Save a full-page screenshot as a test artifact: screenshot("name")."""

    def take(name: str) -> Path:
        ARTIFACTS.mkdir(exist_ok=True)
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return take


@pytest.fixture(scope="session", autouse=True)
def s3_buckets():
    """The platform's buckets, created once on the session's real S3 store."""
    if os.environ.get("SLEUTH_TEST_STACK") == "0":
        return
    from core.s3 import buckets, buckets_ensure, s3_client

    buckets_ensure()
    # A store that takes no objects fails every test that uploads, each after its retries
    # (a CI run spent its 90 minutes so): stop the session at once, saying why.
    client = s3_client()
    for bucket in buckets():
        try:
            client.put_object(Bucket=bucket, Key="session-probe", Body=os.urandom(100_000))
            client.delete_object(Bucket=bucket, Key="session-probe")
        except Exception as error:
            pytest.exit(f"the test session's S3 store takes no objects in {bucket}: {error}", 3)


@pytest.fixture(autouse=True)
def fresh_cache():
    """Each test starts with an empty cache: rate limits counted by one test (all clients
    are 127.0.0.1 here) must not refuse the next test's visitors."""
    if os.environ.get("SLEUTH_TEST_STACK") == "0":
        yield
        return
    from django.core.cache import cache

    cache.clear()
    yield


@pytest.fixture
def wait_for_uploads(page):
    """wait_for_uploads(n): wait until n uploads on the page have ended, and fail with each
    upload's name and state (the reason, for a failed one) if any failed or is still going."""
    from playwright.sync_api import expect

    def wait(n: int, timeout_s: float = 180) -> None:
        states = page.locator(".upload-item")
        ended = page.locator(".upload-item.done, .upload-item.failed")
        try:
            expect(ended).to_have_count(n, timeout=timeout_s * 1000)
        except AssertionError:
            raise AssertionError(
                f"uploads not ended after {timeout_s:.0f} s: {states.all_inner_texts()}"
            ) from None
        assert page.locator(".upload-item.failed").all_inner_texts() == []

    return wait


class MailQueue:
    """The mail tasks that requests sent to the real broker, on a queue no worker reads."""

    def __init__(self, name: str):
        self.name = name

    def messages(self) -> list[tuple[str, dict]]:
        """Take the queued tasks off the broker: (task name, keyword arguments) each."""
        import base64
        import json

        import redis
        from django.conf import settings

        client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
        taken = []
        while (raw := client.rpop(self.name)) is not None:
            message = json.loads(raw)
            _args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            taken.append((message["headers"]["task"], kwargs))
        return taken

    def deliver(self) -> int:
        """Run each queued mail task here (its mail lands in this process's outbox)."""
        from accounts import tasks

        taken = self.messages()
        for name, kwargs in taken:
            assert name == "accounts.tasks.password_reset_mail"
            tasks.password_reset_mail(**kwargs)
        return len(taken)


@pytest.fixture(autouse=True)
def mail_queue(request):
    """Every test queues its mail (a run's end, a password reset), in this process and in
    the workers it starts, on a queue of its own that no worker reads; `deliver()` sends it
    as a worker would. On the suite worker's queue, a run that ended as its test ended had
    its mail task read the run's tables while the teardown truncated them: Postgres broke
    the deadlock by failing the truncate, and the next test began on the last one's rows
    (CI: 'duplicate key value violates unique constraint "accounts_user_email_key"')."""
    if os.environ.get("SLEUTH_TEST_STACK") == "0":
        yield None
        return
    import uuid

    queue = MailQueue(f"test-mail-{uuid.uuid4().hex}")
    request.getfixturevalue("settings").SLEUTH_MAIL_QUEUE = queue.name
    # Worker processes a test starts read their settings from the environment.
    request.getfixturevalue("monkeypatch").setenv("SLEUTH_MAIL_QUEUE", queue.name)
    yield queue
    queue.messages()


@pytest.fixture
def knob(monkeypatch, settings):
    """knob(NAME, value): a Sleuth setting for this test, both in this process (Django's
    settings, which the platform reads) and in the worker processes it starts (their
    environment, from which their settings are read). A list goes to the environment
    comma-separated, as a list setting is read (SLEUTH_ALLOWED_MODELS)."""

    def set_knob(name: str, value) -> None:
        setattr(settings, name, value)
        text = ",".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        monkeypatch.setenv(name, text)

    return set_knob


# A tiny agent trained and published once per session by a real run on a real worker, and a
# real inference worker per module that answers for it (tests/platform/test_api_chat.py,
# test_playground.py, test_api_whole_flow.py, tests/browser/test_playground_page.py). The
# helpers they use are in tests/helpers/serving.py.


@pytest.fixture(scope="session")
def trained_agent(django_db_setup, django_db_blocker, tmp_path_factory):
    """What a real run published: its published folder and index on S3, and its name. Trained
    once for the session (a minute of a worker's training, which three modules used to pay
    each): what it returns lives on S3, which no test empties, and each test publishes it
    again as its own customer's run (tests/helpers/serving.py's publish_for), so a test that
    empties the database between them takes nothing of it away."""
    from unittest import mock

    from django.contrib.auth import get_user_model
    from django.test import override_settings

    from corpora.services import project_create
    from runs.models import Run
    from runs.services import run_create
    from tests.helpers.runs import finished, upload_corpus, upload_questions
    from tests.helpers.serving import RUN_QUEUES, TRAINED_TO_SEARCH, worker
    from tests.helpers.toy import tiny_model_folder

    folder = tmp_path_factory.mktemp("training")
    model = tiny_model_folder(folder)
    allowed = ["default", model]
    with (
        django_db_blocker.unblock(),
        override_settings(SLEUTH_ALLOWED_MODELS=allowed, **RUN_QUEUES),
        mock.patch.dict(os.environ, RUN_QUEUES),
        worker(
            "test-training",
            ",".join(["ingest", *RUN_QUEUES.values()]),
            "solo",
            folder / "worker.log",
            SLEUTH_ALLOWED_MODELS=",".join(allowed),
        ),
    ):
        trainer = get_user_model().objects.create_user(email="trainer@example.com", password="x")
        project = project_create(owner=trainer, name="Toy filings")
        upload_corpus(project)
        run = run_create(
            project=project,
            user=trainer,
            name="tiny",
            question_set=upload_questions(project),
            preset="quick-cpu",
            options={**TRAINED_TO_SEARCH, "model": model},
        )
        run = finished(run)
        assert run.status == Run.Status.SUCCEEDED, run.status_reason
        final = run.checkpoints.get(is_final=True)
        return {
            "published_prefix": final.published_prefix,
            "index_prefix": run.index_prefix,
            "name": final.published_prefix.rsplit("/", 1)[-1],
        }


@pytest.fixture(scope="module")
def inference_worker(django_db_setup, django_db_blocker, tmp_path_factory):
    """A real Celery worker on the "inference" queue, threads sharing one agent cache.
    The playground's modules override it with the base model on its allowlist."""
    from tests.helpers.serving import inference_worker_running

    with inference_worker_running(django_db_blocker, tmp_path_factory) as process:
        yield process


@pytest.fixture(scope="session")
def base_model(tmp_path_factory) -> str:
    """The untrained tiny model the trained agent started from (the same seed, so the same
    weights), as a model folder."""
    from tests.helpers.toy import tiny_model_folder

    return tiny_model_folder(tmp_path_factory.mktemp("base"))
