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
