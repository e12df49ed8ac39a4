"""Sending Celery tasks: the one way the platform queues work, and the queue of each task.

The web side sends tasks by name (`enqueue`), so it never imports the task modules. No caller
names a queue: `task_route`, which settings.CELERY_TASK_ROUTES names, picks it from
`TASK_QUEUES` when the task is sent, so operators' SLEUTH_*_QUEUE variables and a test's
override of those settings both take effect. A worker's retry keeps the queue its task came
from (Celery passes it explicitly, and an explicit queue wins over a route).

Routing by worker kind (issue 69): a run's training and evaluation go to a queue its needs
name (`task_queue(task, needs)`): a CPU run to the train queue itself, a run that needs N
GPUs to "<train queue>-gpuN", which only workers with at least N GPUs consume
(runs.routing). The caller passes the run's needs to `enqueue`, never a queue.
"""

from collections.abc import Sequence

from celery.result import AsyncResult
from django.conf import settings

from config.celery import app
from engine.devices import Needs

# The settings that name each task's queue, read when the task is sent; the first one set
# wins (previews go to the ingest queue unless the operator gives them their own). Tasks not
# listed go to CELERY_TASK_DEFAULT_QUEUE, as the corpora's tasks do explicitly.
TASK_QUEUES: dict[str, tuple[str, ...]] = {
    "config.tasks.run_prepare": ("SLEUTH_INGEST_QUEUE",),
    "config.tasks.run_train": ("SLEUTH_TRAIN_QUEUE",),
    "config.tasks.run_evaluate": ("SLEUTH_TRAIN_QUEUE",),
    "config.tasks.run_publish": ("SLEUTH_INGEST_QUEUE",),
    "config.tasks.run_end_mail": ("SLEUTH_MAIL_QUEUE",),
    "config.tasks.reward_preview": ("SLEUTH_PREVIEW_QUEUE", "SLEUTH_INGEST_QUEUE"),
    "config.tasks.agent_chat": ("SLEUTH_INFERENCE_QUEUE",),
    "accounts.tasks.password_reset_mail": ("SLEUTH_MAIL_QUEUE",),
    "config.tasks.document_parse": ("CELERY_TASK_DEFAULT_QUEUE",),
    "config.tasks.project_index": ("CELERY_TASK_DEFAULT_QUEUE",),
    "config.tasks.echo_recall": ("CELERY_TASK_DEFAULT_QUEUE",),
    "config.tasks.question_set_draft": ("CELERY_TASK_DEFAULT_QUEUE",),
}


# The tasks whose queue also depends on what the run needs from its worker.
NEEDS_ROUTED = frozenset({"config.tasks.run_train", "config.tasks.run_evaluate"})


def task_queue(task: str, needs: Needs | None = None) -> str:
    """The queue `task` is sent to (the sweep asks it whether any worker serves a run's);
    for a run's training and evaluation, the one its `needs` name."""
    for setting in TASK_QUEUES.get(task, ()):
        if queue := getattr(settings, setting, ""):
            break
    else:
        queue = settings.CELERY_TASK_DEFAULT_QUEUE
    if needs is not None and task in NEEDS_ROUTED:
        return needs_queue(queue, needs)
    return queue


def needs_queue(queue: str, needs: Needs) -> str:
    """The queue of a run that needs `needs`, beside `queue` (the train queue)."""
    return f"{queue}-gpu{needs.devices}" if needs.device == "gpu" else queue


def task_route(name: str, args, kwargs, options, task=None, **kw) -> dict | None:
    """Celery's router (settings.CELERY_TASK_ROUTES); None leaves a task Celery's default."""
    if name not in TASK_QUEUES:
        return None
    return {"queue": task_queue(name)}


def enqueue(
    task: str,
    *,
    args: Sequence = (),
    kwargs: dict | None = None,
    needs: Needs | None = None,
    **options,
) -> AsyncResult:
    """Send `task` by name with these arguments, on the queue `task_route` picks, or the one
    a run's `needs` name for its training and evaluation; `options` are Celery's
    (`expires`, ...). Raises when the broker cannot be reached: each caller decides what that
    means for its work (most leave it to a sweep)."""
    if "queue" in options:
        raise TypeError(f"{task}: the queue of a task is set in core.queues.TASK_QUEUES")
    if needs is not None and task in NEEDS_ROUTED:
        options["queue"] = task_queue(task, needs)  # explicit: it wins over task_route's
    return app.send_task(task, args=list(args), kwargs=kwargs, **options)
