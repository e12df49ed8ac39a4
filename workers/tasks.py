"""Celery tasks: thin glue. Each takes ids, calls one service, records the result.

The web side enqueues these by name (`celery_app.send_task("workers.tasks.…")`), so it
never imports this module.
"""

import socket

from celery import shared_task


@shared_task(name="workers.tasks.ping")
def ping(payload: str = "ping") -> dict:
    """Round-trip check through the real broker: echoes the payload and says who answered."""
    return {"payload": payload, "worker": socket.gethostname()}


@shared_task(name="workers.tasks.document_parse")
def document_parse(document_id: int) -> str | None:
    """Parse one uploaded document and record the outcome; returns its new status."""
    from corpora.services import document_parse as parse  # Django is set up by now

    document = parse(document_id=document_id)
    return document.status if document else None
