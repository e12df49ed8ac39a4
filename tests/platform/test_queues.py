"""Enqueueing (issue 67): the platform sends every task through core.queues.enqueue, and each
task's queue is decided in one place, from the queue settings operators set (SLEUTH_*_QUEUE),
read when the task is sent."""

import ast
import base64
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings as django_settings

from config.celery import app
from core.queues import TASK_QUEUES, enqueue, task_queue

REPO = Path(__file__).resolve().parents[2]
PLATFORM = REPO / "platform"
QUEUES_MODULE = PLATFORM / "core" / "queues.py"
TASK_MODULE = PLATFORM / "config" / "tasks.py"
TASK_NAME = re.compile(r"(config|accounts)\.tasks\.\w+")

OPERATOR_QUEUES = {
    "SLEUTH_INGEST_QUEUE": "op-ingest",
    "SLEUTH_TRAIN_QUEUE": "op-train",
    "SLEUTH_PREVIEW_QUEUE": "op-preview",
    "SLEUTH_INFERENCE_QUEUE": "op-inference",
    "SLEUTH_MAIL_QUEUE": "op-mail",
}
# Where each task the platform sends lands when the operator names every queue.
EXPECTED = {
    "config.tasks.run_prepare": "op-ingest",
    "config.tasks.run_publish": "op-ingest",
    "config.tasks.run_train": "op-train",
    "config.tasks.run_evaluate": "op-train",
    "config.tasks.reward_preview": "op-preview",
    "config.tasks.agent_chat": "op-inference",
    "config.tasks.run_end_mail": "op-mail",
    "accounts.tasks.password_reset_mail": "op-mail",
    # No setting of their own: Celery's default queue, whatever SLEUTH_INGEST_QUEUE says.
    "config.tasks.document_parse": "ingest",
    "config.tasks.project_index": "ingest",
    "config.tasks.echo_recall": "ingest",
    "config.tasks.question_set_draft": "ingest",
}


def platform_sources() -> list[Path]:
    return sorted(PLATFORM.rglob("*.py"))


def routed_queue(task: str) -> str:
    """The queue Celery itself sends `task` to (its router, as send_task uses it)."""
    return app.amqp.router.route({}, task)["queue"].name


@pytest.fixture
def operator_queues(settings):
    for name, queue in OPERATOR_QUEUES.items():
        setattr(settings, name, queue)


def test_every_task_the_platform_names_has_its_queue_decided_in_core_queues():
    named = set()
    for path in platform_sources():
        if path in (QUEUES_MODULE, TASK_MODULE):  # where they are routed and defined
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if TASK_NAME.fullmatch(node.value):
                    named.add(node.value)

    assert named == set(EXPECTED)
    assert set(TASK_QUEUES) == set(EXPECTED)


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_each_task_routes_to_the_queue_its_setting_names(operator_queues, task):
    assert routed_queue(task) == EXPECTED[task]
    assert task_queue(task) == EXPECTED[task]


def test_with_the_default_settings_runs_train_on_train_and_the_rest_goes_to_ingest(settings):
    settings.SLEUTH_INGEST_QUEUE, settings.SLEUTH_TRAIN_QUEUE = "ingest", "train"
    settings.SLEUTH_PREVIEW_QUEUE, settings.SLEUTH_INFERENCE_QUEUE = "", "inference"

    assert routed_queue("config.tasks.run_train") == "train"
    assert routed_queue("config.tasks.run_evaluate") == "train"
    assert routed_queue("config.tasks.agent_chat") == "inference"
    for task in ("run_prepare", "run_publish", "reward_preview", "document_parse"):
        assert routed_queue(f"config.tasks.{task}") == "ingest"


def test_previews_go_to_the_ingest_queue_unless_the_operator_names_one(settings):
    settings.SLEUTH_INGEST_QUEUE, settings.SLEUTH_PREVIEW_QUEUE = "op-ingest", ""

    assert routed_queue("config.tasks.reward_preview") == "op-ingest"


def test_a_task_the_platform_never_sends_keeps_celerys_default_queue(operator_queues):
    assert routed_queue("config.tasks.ping") == "ingest"


def test_an_operators_environment_variable_routes_the_task():
    """Settings are read from the environment when a process starts, as in production."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(PLATFORM), str(REPO)]),
        "SLEUTH_TRAIN_QUEUE": "gpu-from-the-environment",
        "SLEUTH_MAIL_QUEUE": "mail-from-the-environment",
    }
    script = (
        "from config.celery import app\n"
        "for task in ('config.tasks.run_train', 'accounts.tasks.password_reset_mail'):\n"
        "    print(app.amqp.router.route({}, task)['queue'].name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["gpu-from-the-environment", "mail-from-the-environment"]


def test_an_enqueued_task_lands_on_its_routed_queue_with_its_arguments(knob):
    queue = f"test-queues-{uuid.uuid4().hex[:8]}"
    knob("SLEUTH_TRAIN_QUEUE", queue)
    broker = redis.Redis.from_url(django_settings.CELERY_BROKER_URL)
    try:
        enqueue("config.tasks.run_train", args=[41])

        (raw,) = broker.lrange(queue, 0, -1)
    finally:
        broker.delete(queue)
    message = json.loads(raw)
    args, kwargs, _embed = json.loads(base64.b64decode(message["body"]))
    assert (message["headers"]["task"], args, kwargs) == ("config.tasks.run_train", [41], {})


def test_a_caller_cannot_choose_a_tasks_queue():
    with pytest.raises(TypeError, match="core.queues.TASK_QUEUES"):
        enqueue("config.tasks.run_train", args=[1], queue="elsewhere")


def test_nothing_in_the_platform_calls_send_task_but_core_queues():
    callers = []
    for path in platform_sources():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "send_task"
            ):
                callers.append(f"{path.relative_to(REPO)}:{node.lineno}")

    assert callers and all(c.startswith("platform/core/queues.py:") for c in callers), callers
