"""Celery tasks: thin glue. Each takes ids, calls one service, records the result.

The web side enqueues these by name (`celery_app.send_task("config.tasks.…")`), so it
never imports this module.
"""

import socket

from botocore.exceptions import BotoCoreError, ClientError
from celery import shared_task
from celery.worker.control import control_command


@shared_task(name="config.tasks.ping")
def ping(payload: str = "ping") -> dict:
    """Round-trip check through the real broker: echoes the payload and says who answered."""
    return {"payload": payload, "worker": socket.gethostname()}


@shared_task(name="config.tasks.document_parse")
def document_parse(document_id: int) -> str | None:
    """Parse one uploaded document and record the outcome; returns its new status."""
    from corpora.services import document_parse as parse  # Django is set up by now

    document = parse(document_id=document_id)
    return document.status if document else None


# -- runs: one task per stage; each claims the run with a lease (runs.stage) ------------

RUN_STAGE_RETRIES = 4


def _stage_time_limit() -> int:
    """A hard limit (prefork pools kill the process past it) above any stage's own time
    limit (runs.stage.stage_limit_seconds, from the run's budget): the last resort for a
    stage stuck where the in-process limit cannot reach it (inside C code)."""
    from django.conf import settings

    return settings.SLEUTH_MAX_RUN_MINUTES * 60 + 2 * 600


def _run_stage(task, stage: str, run_id: int) -> str | None:
    """Call one stage service; retry with backoff while storage is unreachable, then fail
    the run with the reason."""
    from runs import pipeline
    from runs.stage import TransientError

    try:
        run = getattr(pipeline, stage)(run_id=run_id)
    except TransientError as error:
        if task.request.retries >= RUN_STAGE_RETRIES:
            pipeline.run_fail(run_id=run_id, reason=f"{error}. Gave up after several tries.")
            return "failed"
        raise task.retry(countdown=min(5 * 2**task.request.retries, 120)) from error
    return run.status if run else None


@shared_task(
    name="config.tasks.project_index",
    autoretry_for=(BotoCoreError, ClientError),  # storage unreachable: try again later
    retry_backoff=5,
    max_retries=4,
)
def project_index(project_id: int) -> str | None:
    """Build (or reuse) a project's BM25 index from its parsed documents, as soon as they
    are parsed; returns its prefix (None when there is nothing to index)."""
    from corpora.indexing import project_index_refresh

    return project_index_refresh(project_id=project_id)


@shared_task(name="config.tasks.echo_recall")
def echo_recall(project_id: int, question_set_id: int | None = None) -> dict:
    """Measure the echo recall of a project's question sets on its current index."""
    from corpora.indexing import question_sets_echo_recall

    return question_sets_echo_recall(project_id=project_id, question_set_id=question_set_id)


@shared_task(name="config.tasks.reward_preview")
def reward_preview(preview_id: str) -> str | None:
    """Score a reward preview's sample answers within its deadline; the page polls for it."""
    from runs.services import reward_preview_run

    return reward_preview_run(preview_id=preview_id)


@shared_task(name="config.tasks.agent_chat", bind=True)
def agent_chat(self, agent: dict, question: str, sampling: dict) -> dict:
    """Answer one /v1 chat completion with a published agent, on the "inference" queue
    (its worker keeps agents loaded); each search is reported as progress as it happens."""
    from serving.inference import agent_answer
    from serving.selectors import published_checkpoint

    # The files to load come from the database, never the message (an unauthenticated
    # broker could name any prefix): the message only says which published checkpoint.
    stored = published_checkpoint(checkpoint_id=int(agent["checkpoint_id"]))
    if stored is None:
        raise ValueError(f"checkpoint {agent['checkpoint_id']} is no published agent")
    agent = {**agent, **stored}

    def progress(searches: list[dict]) -> None:
        self.update_state(state="PROGRESS", meta={"searches": searches})

    return agent_answer(agent=agent, question=question, on_search=progress, **sampling)


@shared_task(name="config.tasks.question_set_generate")
def question_set_generate(project_id: int) -> int:
    """Generate questions with answers from a project's documents; returns the set's id."""
    from runs.pipeline import question_set_generate as generate

    return generate(project_id=project_id).pk


@shared_task(name="config.tasks.question_set_draft")
def question_set_draft(generation_id: int) -> str | None:
    """The project page's "Generate questions from my documents": a draft set to review."""
    from corpora.generation import question_generation_run

    generation = question_generation_run(generation_id=generation_id)
    return generation.status if generation else None


@shared_task(
    name="config.tasks.run_prepare",
    bind=True,
    max_retries=RUN_STAGE_RETRIES,
    time_limit=_stage_time_limit(),
)
def run_prepare(self, run_id: int) -> str | None:
    from runs.selectors import run_next_to_start

    # Claim order fair across owners: any queued run's task starts the fairest queued run.
    return _run_stage(self, "run_prepare", run_next_to_start(run_id=run_id))


@shared_task(
    name="config.tasks.run_train",
    bind=True,
    max_retries=RUN_STAGE_RETRIES,
    time_limit=_stage_time_limit(),
)
def run_train(self, run_id: int) -> str | None:
    return _run_stage(self, "run_train", run_id)


@shared_task(
    name="config.tasks.run_evaluate",
    bind=True,
    max_retries=RUN_STAGE_RETRIES,
    time_limit=_stage_time_limit(),
)
def run_evaluate(self, run_id: int) -> str | None:
    return _run_stage(self, "run_evaluate", run_id)


@shared_task(
    name="config.tasks.run_publish",
    bind=True,
    max_retries=RUN_STAGE_RETRIES,
    time_limit=_stage_time_limit(),
)
def run_publish(self, run_id: int) -> str | None:
    return _run_stage(self, "run_publish", run_id)


@shared_task(
    name="config.tasks.run_end_mail",
    autoretry_for=(OSError,),  # the mail server (smtplib's errors are OSErrors)
    retry_backoff=30,
    max_retries=5,
)
def run_end_mail(*, run_id: int) -> bool:
    """Mail a run's owner that it ended, once (runs.notifications); on the mail queue."""
    from runs.notifications import run_end_mail_send

    return run_end_mail_send(run_id=run_id)


@shared_task(name="config.tasks.runs_sweep")
def runs_sweep() -> list[int]:
    """Requeue or fail runs whose worker stopped renewing its lease."""
    from runs.sweep import runs_sweep as sweep

    return sweep()


@control_command(args=[("prefix", str)], signature="<prefix>")
def purge_local_copies(state, prefix: str) -> dict:
    """A remote-control command every worker takes at once (not a queued task), broadcast by
    core.local_copies.purge_everywhere when a run, project or account is deleted: this
    worker's copies of what lay under `prefix` leave its disk."""
    from core.local_copies import purge_here

    try:
        return {"purged": purge_here(prefix)}
    except ValueError as error:  # not one project's folder: nothing is purged
        return {"error": str(error)}


def _sweep_forever(interval: float, queues: list[str]) -> None:
    import logging
    import time

    from django.db import connection

    history_expired_at = float("-inf")  # monotonic time of the last retention pass (hourly)
    while True:
        try:
            from corpora.parse_deadlines import documents_sweep
            from runs.retention import runs_history_expire
            from runs.sweep import queues_announce, runs_sweep

            queues_announce(queues, ttl_seconds=3 * interval)
            runs_sweep()
            documents_sweep()
            if time.monotonic() - history_expired_at >= 3600:
                runs_history_expire()
                history_expired_at = time.monotonic()
        except Exception:  # the database or Redis blinked: try again next time
            logging.getLogger(__name__).warning("sweep failed", exc_info=True)
            connection.close()
        time.sleep(interval)


def _start_sweeper(sender=None, **kwargs) -> None:
    """Every worker, in a background thread (no beat needed): announces the queues it
    serves, sweeps expired run leases (a run whose worker was killed is taken over by one
    that is alive) and documents whose parse never finished, and hourly deletes the history
    of runs past the retention (runs.retention)."""
    import threading

    from django.conf import settings

    interval = settings.SLEUTH_RUN_SWEEP_SECONDS
    queues = list(sender.app.amqp.queues.consume_from) if sender is not None else []
    if interval > 0:
        threading.Thread(target=_sweep_forever, args=(interval, queues), daemon=True).start()


def _take_the_queues_its_devices_hold(sender=None, instance=None, **kwargs) -> None:
    """A worker started on the train queue consumes the training queues of the runs its
    devices can hold (runs.routing): one per GPU count up to its own, and the train queue
    itself (CPU runs) unless it keeps its GPUs for GPU runs. Its devices are detected here,
    once, before any pool process forks, or named by SLEUTH_WORKER_DEVICES."""
    import logging

    from engine.devices import worker_devices
    from runs.routing import worker_queues_adjust

    queues = instance.app.amqp.queues
    consumed = list(queues.consume_from or {})
    devices = worker_devices()
    add, drop = worker_queues_adjust(consumed, devices)
    for queue in add:
        queues.select_add(queue)
    if drop:
        queues.deselect(drop)
    if add or drop:
        logging.getLogger(__name__).warning(
            "sleuth worker %s holds %s (%s): consumes %s",
            sender,
            devices.describe(),
            devices.spec(),
            ", ".join(queues.consume_from),
        )


from celery.signals import celeryd_after_setup, worker_ready  # noqa: E402 - beside their use

celeryd_after_setup.connect(_take_the_queues_its_devices_hold, weak=False)
worker_ready.connect(_start_sweeper, weak=False)
