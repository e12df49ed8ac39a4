"""The Celery app. Tasks live in `config.tasks` (and the mail in `accounts.tasks`); the web
side enqueues them by name.

Every process that loads it (web, worker, manage.py) runs with the Hugging Face hub offline
unless the operator sets SLEUTH_ALLOW_HUB_DOWNLOADS: models load from local folders and the
cache only, so no customer input can make a worker download. Set here, before any module
imports huggingface_hub (which reads HF_HUB_OFFLINE once, at import).

A worker refuses to start with development defaults while attached to services on another
machine (core.startup.check_worker).
"""

import logging
import os

from celery import Celery
from celery.signals import worker_init

from engine.process_env import apply_defaults

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
if os.environ.get("SLEUTH_ALLOW_HUB_DOWNLOADS", "").strip().lower() not in {
    "1",
    "true",
    "yes",
    "on",
}:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
apply_defaults()  # before torch loads: the worker's threads and GPU memory, as in the CLI

app = Celery("sleuth")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["config", "accounts"])

# Tasks whose results are a customer's content (a chat's answer, its searches and document
# snippets): the worker's "Task … succeeded" line keeps its name, id and time, not the result,
# so worker logs (shipped, kept, read by operators) hold no tenant's documents.
CONTENT_RESULT_TASKS = frozenset({"config.tasks.agent_chat"})
RESULT_NOT_LOGGED = "<result not logged: customer content>"


class _ContentResultFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        context = record.args
        if isinstance(context, dict) and context.get("name") in CONTENT_RESULT_TASKS:
            record.args = {**context, "return_value": RESULT_NOT_LOGGED}
            if isinstance(getattr(record, "data", None), dict):
                record.data = record.args
        return True


logging.getLogger("celery.app.trace").addFilter(_ContentResultFilter())


@worker_init.connect
def _refuse_insecure_defaults(**_):
    from core.startup import InsecureStartup, check_worker

    try:
        check_worker()
    except InsecureStartup as error:
        # Celery logs and swallows a signal handler's exceptions; SystemExit stops the worker.
        raise SystemExit(f"sleuth worker: {error}") from None
