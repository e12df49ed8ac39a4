"""This machine's copies of S3 objects, under SLEUTH_WORK_DIR: project indexes (corpora.indexing)
and published agents (serving.inference), each a folder named by a hash of its prefix, kept
until the least recently used are evicted.

When a run, project or account is deleted its objects leave S3 at once, and its copies must
leave every disk too, not wait for eviction: `purge_everywhere` deletes this process's
machine's copies and asks every connected worker to delete theirs (a Celery remote-control
broadcast, config.tasks.purge_local_copies). A worker that is not connected then keeps its
copies until they are evicted; nothing serves them, since the rows that named them are gone.
"""

import logging
from pathlib import Path

from django.conf import settings

from config.celery import app
from core.s3 import is_project_folder
from engine.search.store import purge_copies

logger = logging.getLogger(__name__)

INDEX_COPIES = "indexes"
AGENT_COPIES = "serving"


def copies_root(kind: str) -> Path:
    """The folder of this machine's copies of one kind (INDEX_COPIES, AGENT_COPIES)."""
    return Path(settings.SLEUTH_WORK_DIR) / kind


def purge_here(prefix: str) -> int:
    """Delete this machine's copies of whatever lay under `prefix` (a project's folder or a
    folder in it, ending in "/"); returns how many."""
    if not is_project_folder(prefix):
        raise ValueError(f"refusing to purge the copies of the broad prefix {prefix!r}")
    return sum(purge_copies(copies_root(kind), prefix) for kind in (INDEX_COPIES, AGENT_COPIES))


def purge_everywhere(prefix: str) -> None:
    """Purge here, then ask every connected worker to purge. The objects are already deleted:
    a broker that cannot be reached is logged, not raised."""
    purge_here(prefix)
    try:
        app.control.broadcast("purge_local_copies", arguments={"prefix": prefix})
    except Exception:  # the broker is down: the workers' copies go by eviction
        logger.warning("could not ask the workers to purge their copies of %s", prefix)
