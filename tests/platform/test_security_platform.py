"""Platform-side limits (issue 14): capped reward previews, models from the operator's
allowlist only, the hub offline in Sleuth's processes, and no start with development
defaults where others can reach the process; `check --deploy` clean in production."""

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from core.startup import (
    DEV_SECRET_KEY,
    InsecureStartup,
    check_web_server,
    check_worker,
    gunicorn_bind_hosts,
)
from corpora.models import Document
from corpora.services import project_create
from engine.rewards.reward import MAX_ANSWER_CHARS
from runs.forms import MAX_PREVIEW_ANSWERS, RewardPreviewForm, RunForm
from runs.services import RunRejected, allowed_models, run_create

REPO_ROOT = Path(__file__).resolve().parents[2]
PLATFORM = REPO_ROOT / "platform"


def _env(**changes) -> dict:
    """The test's environment (services' URLs and keys) with `changes`; None removes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLATFORM), str(REPO_ROOT)])}
    for key, value in changes.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- item 3: reward preview input is capped -------------------------------------------------


@pytest.mark.django_db
def test_the_reward_preview_refuses_an_over_long_answer(alice):
    project = project_create(owner=alice, name="Filings")
    data = {"question_text": "Revenue?", "ground_truth": "$5 million"}

    long_answer = RewardPreviewForm(
        {**data, "sample_answers": "1 " * MAX_ANSWER_CHARS}, project=project
    )
    assert not long_answer.is_valid()
    assert "under 2000 characters" in str(long_answer.errors["sample_answers"])

    # The whole field is bounded before it is split into lines.
    flood = RewardPreviewForm({**data, "sample_answers": "7\n" * 200_000}, project=project)
    assert not flood.is_valid()
    assert "at most" in str(flood.errors["sample_answers"])

    fine = RewardPreviewForm(
        {**data, "sample_answers": "\n".join(["$5 million"] * MAX_PREVIEW_ANSWERS)},
        project=project,
    )
    assert fine.is_valid(), fine.errors


# --- item 4: models come from the operator's allowlist ----------------------------------------


@pytest.mark.django_db
def test_the_run_form_offers_only_allowed_models_and_takes_no_path(alice, settings):
    project = project_create(owner=alice, name="Filings")
    assert allowed_models() == ["default", "Qwen/Qwen3-4B-Instruct-2507"]  # the presets'
    form = RunForm(project=project)
    assert [value for value, _ in form.fields["model"].choices] == [
        "",
        "default",
        "Qwen/Qwen3-4B-Instruct-2507",
    ]
    for typed in ("/etc", "../../var", "someone/any-model", "gpt2"):
        posted = RunForm({"name": "x", "preset": "quick-cpu", "model": typed}, project=project)
        assert not posted.is_valid()
        assert "model" in posted.errors

    settings.SLEUTH_ALLOWED_MODELS = ["default"]
    posted = RunForm(
        {"name": "x", "preset": "quick-cpu", "model": "Qwen/Qwen3-4B-Instruct-2507"},
        project=project,
    )
    assert not posted.is_valid()


@pytest.mark.django_db
def test_the_run_service_refuses_a_model_that_is_not_allowed(alice, settings):
    project = project_create(owner=alice, name="Filings")
    Document.objects.create(
        project=project,
        name="doc.txt",
        kind="text",
        content_type="text/plain",
        size=10,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/documents/1/doc.txt",
        status="parsed",
    )
    for model in ("/root/.cache/huggingface", "someone/any-model"):
        with pytest.raises(RunRejected, match="is not offered here"):
            run_create(
                project=project,
                user=alice,
                name="x",
                question_set=None,
                options={"model": model},
            )
    # The operator restricts the list: even a preset's own model is refused.
    settings.SLEUTH_ALLOWED_MODELS = ["default"]
    with pytest.raises(RunRejected, match="is not offered here"):
        run_create(project=project, user=alice, name="x", question_set=None, preset="standard-gpu")
    # An operator's folder, once listed, is accepted (as the suite's tiny model is).
    settings.SLEUTH_ALLOWED_MODELS = ["default", "/srv/models/tiny"]
    run = run_create(
        project=project,
        user=alice,
        name="x",
        question_set=None,
        options={"model": "/srv/models/tiny"},
    )
    assert run.config["model"] == "/srv/models/tiny"


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("stage", ["training", "evaluating"])
@pytest.mark.parametrize("model", ["evil/model", "/root/.cache/huggingface/hub/any"])
def test_a_worker_refuses_a_model_off_the_allowlist_and_loads_nothing(
    training_run, stage, model, monkeypatch
):
    """Defence in depth: a run whose stored settings name a model the operator does not offer
    (edited in the database, or sent some other way than the form and the API) fails on the
    worker before anything is downloaded or loaded."""
    import engine.agent.models
    from runs import artifacts, pipeline
    from runs.models import Run

    touched = []
    for owner, name in [
        (engine.agent.models, "load_model"),
        (engine.agent.models, "load_trainable"),
        (engine.agent.models, "resolve_model_path"),
        (artifacts, "download_folder"),
        (pipeline, "restore_checkpoint"),
        (pipeline, "evaluate"),
    ]:
        monkeypatch.setattr(owner, name, lambda *a, _name=name, **k: touched.append(_name))
    run = training_run
    Run.objects.filter(pk=run.pk).update(config={**run.config, "model": model}, status=stage)

    stage_service = pipeline.run_train if stage == "training" else pipeline.run_evaluate
    finished = stage_service(run_id=run.pk)

    assert finished.status == Run.Status.FAILED
    assert f"The model {model!r} is not offered on this platform" in finished.status_reason
    assert touched == []


@pytest.mark.parametrize(
    ("allow", "expected"), [(None, "1"), ("1", "unset")], ids=["default", "operator-allows"]
)
def test_sleuth_processes_run_with_the_hub_offline_unless_the_operator_allows(allow, expected):
    code = "import os, config.celery; print(os.environ.get('HF_HUB_OFFLINE', 'unset'))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=_env(HF_HUB_OFFLINE=None, SLEUTH_ALLOW_HUB_DOWNLOADS=allow),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


# --- item 12: no development defaults on a reachable address ---------------------------------


def _settings(debug=False, key="a" * 60, db_host="127.0.0.1", broker="redis://127.0.0.1:6379/0"):
    return SimpleNamespace(
        DEBUG=debug,
        SECRET_KEY=key,
        DATABASES={"default": {"HOST": db_host}},
        CELERY_BROKER_URL=broker,
    )


def test_the_start_up_checks_refuse_development_defaults_off_loopback():
    for unsafe in (_settings(debug=True), _settings(key=DEV_SECRET_KEY)):
        check_web_server(["127.0.0.1", "::1", "localhost"], unsafe)  # make run: fine
        with pytest.raises(InsecureStartup, match="Refusing to serve on 0.0.0.0"):
            check_web_server(["127.0.0.1", "0.0.0.0"], unsafe)
        check_worker(unsafe)
        with pytest.raises(InsecureStartup, match="db.internal"):
            check_worker(
                SimpleNamespace(
                    **{**vars(unsafe), "DATABASES": {"default": {"HOST": "db.internal"}}}
                )
            )
    check_web_server(["0.0.0.0"], _settings())  # production settings serve anywhere
    check_worker(_settings(db_host="db.internal", broker="redis://redis:6379/0"))
    assert gunicorn_bind_hosts(["config.wsgi:application"], {}) == ["127.0.0.1"]
    assert gunicorn_bind_hosts([], {"PORT": "9000"}) == ["0.0.0.0"]
    assert gunicorn_bind_hosts(["-b", "[::]:80", "--bind=unix:/run/s.sock"], {}) == ["::"]


def _gunicorn(bind: str, log: Path) -> subprocess.Popen:
    # No DJANGO_SETTINGS_MODULE and no DEBUG: what a bare `gunicorn config.wsgi` gets.
    return subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", bind]
        + ["--workers", "1", "--timeout", "120"],
        env=_env(DJANGO_SETTINGS_MODULE=None, DEBUG=None, SECRET_KEY=None),
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def test_gunicorn_with_development_defaults_refuses_a_public_address_and_serves_loopback(
    tmp_path,
):
    refused = _gunicorn(f"0.0.0.0:{_free_port()}", tmp_path / "public.log")
    try:
        assert refused.wait(timeout=180) != 0
    finally:
        if refused.poll() is None:
            os.killpg(refused.pid, 9)
    log = (tmp_path / "public.log").read_text()
    assert "Refusing to serve on 0.0.0.0: DEBUG is on and SECRET_KEY is the public" in log

    port = _free_port()
    served = _gunicorn(f"127.0.0.1:{port}", tmp_path / "local.log")
    try:
        deadline, status = time.monotonic() + 180, None
        while status != 200 and time.monotonic() < deadline:
            assert served.poll() is None, (tmp_path / "local.log").read_text()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as r:
                    status = r.status
            except OSError:
                time.sleep(0.5)
        assert status == 200
    finally:
        served.terminate()
        try:
            served.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(served.pid, 9)


def test_a_worker_with_development_defaults_refuses_a_remote_database():
    done = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo"]
        + ["-Q", "nothing-here", "-l", "INFO"],
        env=_env(
            DJANGO_SETTINGS_MODULE=None,
            DEBUG=None,
            SECRET_KEY=None,
            DATABASE_URL="postgres://sleuth:pw@db.internal:5432/sleuth",
        ),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode != 0
    assert "Refusing to start a worker attached to db.internal" in done.stdout + done.stderr


def test_check_deploy_is_clean_with_production_settings():
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        env=_env(
            DJANGO_SETTINGS_MODULE="config.settings.production",
            SECRET_KEY=secrets.token_urlsafe(50),
            ALLOWED_HOSTS="sleuth.example.com",
            SITE_URL="https://sleuth.example.com",
            DJANGO_ALLOW_ASYNC_UNSAFE=None,  # the test session's own (tests/conftest.py)
        ),
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "System check identified no issues" in done.stdout
