"""The mail to a run's owner when the run ends (issue 15): succeeded, failed (with the reason)
or cancelled, with its validation numbers and a link to the run's page.

Whatever ends a run (a stage, the sweep, a cancel request) only queues the mail, once its
transaction commits (`run_end_notify_later`): an end that rolls back (a worker that lost its
lease) queues nothing, and neither a worker's fenced transaction nor a web request waits on
a mail server. A Celery task on the mail queue (settings.SLEUTH_MAIL_QUEUE, as the password
reset mail) sends it (`run_end_mail_send`), once per run: it first claims the run's
`notified_at`, so a task delivered twice, or queued twice by a race, sends one mail.

Links are absolute: the site's root is settings.SITE_URL (a worker has no request to take
it from).
"""

import logging

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models.functions import Now
from django.template.loader import render_to_string
from django.urls import reverse

from core.queues import enqueue

from .models import Run

logger = logging.getLogger(__name__)

TASK = "config.tasks.run_end_mail"


def site_url() -> str:
    """The site's root URL, e.g. "https://sleuth.example.com" (no trailing slash)."""
    return settings.SITE_URL.rstrip("/")


def run_end_notify_later(run: Run) -> None:
    """Queue the owner's mail about `run`'s end, after the current transaction commits."""
    run_id = run.pk
    transaction.on_commit(lambda: _enqueue(run_id))


def _enqueue(run_id: int) -> None:
    try:
        enqueue(TASK, kwargs={"run_id": run_id})  # on the mail queue (core.queues)
    except Exception:  # the broker is down: the run has ended all the same
        logger.warning("could not queue the end-of-run mail of run %s", run_id, exc_info=True)


def run_end_mail_send(*, run_id: int) -> bool:
    """Mail the owner of a finished run that it ended; False when nothing was sent (already
    sent, the run is gone or still active, or the owner's account is inactive). A mail
    server error gives the claim back and raises, so the task may try again."""
    claimed = Run.objects.filter(pk=run_id, status__in=Run.FINISHED, notified_at=None).update(
        notified_at=Now()
    )
    if not claimed:
        return False
    run = Run.objects.select_related("project__owner").filter(pk=run_id).first()
    owner = run.project.owner if run is not None else None
    if owner is None or not owner.is_active or not owner.email:
        return False
    context = run_end_mail_context(run)
    subject = " ".join(render_to_string("runs/email/run_ended_subject.txt", context).split())
    try:
        send_mail(
            subject=subject,
            message=render_to_string("runs/email/run_ended.txt", context),
            from_email=None,
            recipient_list=[owner.email],
        )
    except Exception:
        Run.objects.filter(pk=run_id).update(notified_at=None)
        raise
    return True


def run_end_mail_context(run: Run) -> dict:
    """What the mail says: the outcome, the reason, the run page's validation rows (the
    trained agent first, then the baselines) and the page's absolute link."""
    from .selectors import validation_rows  # the run page's own rows, labels included

    return {
        "run": run,
        "project": run.project,
        "outcome": {
            Run.Status.SUCCEEDED: "succeeded",
            Run.Status.FAILED: "failed",
            Run.Status.CANCELLED: "was cancelled",
        }.get(run.status, run.status),
        "rows": validation_rows(run.eval_report),
        "link": site_url() + reverse("runs:run_detail", args=[run.pk]),
    }
