"""Deadlines for parsing documents, so none stays "uploaded" forever.

An uploaded document gets a pick-up deadline; the worker that claims its parse moves the
deadline to the parse's own time limit. Past it (the task was lost with the broker, the
worker was killed mid-parse, no worker serves the queue), `documents_sweep` queues the
parse again, up to SLEUTH_PARSE_MAX_REQUEUES times, then fails the document with a reason the
customer can act on. Deadlines are on the database's clock. A document waiting for its
account's turn (corpora.parse_slots) has no deadline yet: it gets one when it is queued, and
the same sweep queues it if the turn it was due was lost.
"""

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import DateTimeField, DurationField, ExpressionWrapper, F, Value
from django.db.models.functions import Coalesce, Now

from core.queues import enqueue
from engine.documents.parsing import ParseLimits

from .models import Document

logger = logging.getLogger(__name__)


def _db_now_plus(seconds: float) -> ExpressionWrapper:
    return ExpressionWrapper(
        Now() + Value(timedelta(seconds=seconds), output_field=DurationField()),
        output_field=DateTimeField(),
    )


def parse_pickup_deadline() -> ExpressionWrapper:
    """How long a queued parse may wait for a worker."""
    return _db_now_plus(settings.SLEUTH_PARSE_PICKUP_SECONDS)


def parse_running_deadline() -> ExpressionWrapper:
    """How long a claimed parse may take: the sandbox's time limit, plus the download."""
    return _db_now_plus(ParseLimits().timeout_s + 120)


def parse_enqueue(document_id: int) -> bool:
    """Queue a document's parse; with the broker down, leave it to the sweep (False)."""
    try:
        enqueue("config.tasks.document_parse", args=[document_id])
    except Exception:
        logger.warning("could not queue the parse of document %s; the sweep will", document_id)
        return False
    return True


def documents_sweep() -> list[int]:
    """Queue again, or fail, uploaded documents whose parse deadline passed; returns their
    ids. Then queue the documents waiting for their account's turn that it has slots for
    (those failed here, or a turn lost with a worker)."""
    swept = []
    due = Document.objects.filter(status=Document.Status.UPLOADED, parse_deadline__lt=Now())
    for document in due.only("pk", "parse_deadline", "parse_requeues", "parse_started_at"):
        if document.parse_requeues >= settings.SLEUTH_PARSE_MAX_REQUEUES:
            ended = Document.objects.filter(
                pk=document.pk,
                status=Document.Status.UPLOADED,
                parse_deadline=document.parse_deadline,
            ).update(
                status=Document.Status.FAILED,
                error=(
                    f"Reading this file did not finish after {document.parse_requeues + 1} "
                    "tries: the worker reading it stopped, or no worker took it up. Upload it "
                    "again; if it fails the same way, contact support."
                ),
            )
        else:
            # parse_started_at back to None: the next worker's claim may take it.
            ended = Document.objects.filter(
                pk=document.pk,
                status=Document.Status.UPLOADED,
                parse_deadline=document.parse_deadline,
            ).update(
                parse_started_at=None,
                parse_deadline=parse_pickup_deadline(),
                parse_requeues=F("parse_requeues") + 1,
                # Queued again, so it holds its account's slot (set unless the row predates
                # the slots or was made by hand).
                parse_queued_at=Coalesce(F("parse_queued_at"), Now()),
            )
            if ended:
                parse_enqueue(document.pk)
        if ended:
            swept.append(document.pk)
    # Here, not at the module's top: parse_slots queues through this module's parse_enqueue.
    from .parse_slots import parses_admit_waiting

    parses_admit_waiting()
    return swept
