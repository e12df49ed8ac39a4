"""Turns on the parse queue: one account's uploads cannot delay everyone's parsing (issue 68,
item 6).

The broker hands out `config.tasks.document_parse` first in, first out, whoever sent it, so
one customer's 500 uploads used to sit ahead of another customer's one. Now an account has at
most SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT documents in flight: queued or being parsed (status
"uploaded" with `parse_queued_at` set). Its other uploads wait in the database
(`parse_queued_at` None; the project page says "waiting for its turn" and its place in line)
and are let in oldest first by `parses_admit`, which the upload calls, the parse calls when it
ends (parsed, failed, or the worker's own error) and the deletions call. Another account's
upload is so queued at once and waits behind at most the cap of each busy account's parses.

The workers' sweep (parse_deadlines.documents_sweep) calls `parses_admit_waiting`: the safety
net for an admission lost with a worker killed between its parse's end and the admission, or
with the database blinking then. A document let in whose message is lost has a pick-up
deadline, as every queued parse does, after which the sweep sends it again.

Counting the free slots and taking them is one transaction under a Postgres advisory lock for
the account, so two workers ending two of its parses at once cannot both take the same slot
(the parse's own claim, a conditional UPDATE in services.document_parse, keeps two workers off
one document). Not the owner's row lock that uploads and deletions take: they hold it across
S3 transfers, and a worker ending a parse would wait for them.
"""

import logging
from functools import partial

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models.functions import Now

from .models import Document
from .parse_deadlines import parse_enqueue, parse_pickup_deadline

logger = logging.getLogger(__name__)

# The first key of the account's advisory lock: a name for "parse turns" among any other
# advisory locks the database may see. The second is the account's id.
LOCK_SPACE = 0x5E_0068


def parses_cap() -> int:
    # A cap of 0 would leave every upload waiting forever: one at a time is the least.
    return max(1, settings.SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT)


def _account_documents(owner_id: int):
    return Document.objects.filter(project__owner_id=owner_id, status=Document.Status.UPLOADED)


def _parses_in_flight(owner_id: int) -> int:
    """The account's documents queued or being parsed."""
    return _account_documents(owner_id).filter(parse_queued_at__isnull=False).count()


def _parses_waiting(owner_id: int):
    """The account's documents waiting for their turn, first come first."""
    return _account_documents(owner_id).filter(parse_queued_at=None).order_by("created_at", "pk")


def parses_admit(*, owner_id: int) -> list[int]:
    """Let the account's oldest waiting documents into the parse queue, as many as it has
    free slots; returns their ids. Their tasks are sent when the caller's transaction commits
    (at once outside one); with the broker down they wait for the sweep like any queued
    parse (their pick-up deadline)."""
    with transaction.atomic():
        with connection.cursor() as cursor:
            # Transaction-scoped: released at commit or rollback, whatever happens here. Two
            # int4 keys; an id past 2**31 shares a lock with another account, which only
            # serialises the two.
            cursor.execute(
                "SELECT pg_advisory_xact_lock(%s, %s)", [LOCK_SPACE, owner_id & 0x7FFFFFFF]
            )
        free = parses_cap() - _parses_in_flight(owner_id)
        if free <= 0:
            return []
        # Locked, so a deletion of one of them waits until they are marked, and the ids
        # returned are documents that exist.
        admitted = list(
            _parses_waiting(owner_id)
            .select_for_update(of=("self",))
            .values_list("pk", flat=True)[:free]
        )
        if not admitted:
            return []
        Document.objects.filter(pk__in=admitted).update(
            parse_queued_at=Now(), parse_deadline=parse_pickup_deadline()
        )
        for document_id in admitted:
            transaction.on_commit(partial(parse_enqueue, document_id))
    return admitted


def parses_admit_quietly(*, owner_id: int) -> list[int]:
    """`parses_admit` where its failure must not fail the caller (a parse that ended, a
    deletion that is done): the database blinked, so the sweep lets them in later."""
    try:
        return parses_admit(owner_id=owner_id)
    except DatabaseError:
        logger.warning("could not queue account %s's next parses; the sweep will", owner_id)
        return []


def parses_admit_waiting() -> dict[int, list[int]]:
    """The sweep: every account with documents waiting gets its free slots filled (the
    admission after a parse ended was lost); returns {account id: documents let in}."""
    owners = (
        Document.objects.filter(status=Document.Status.UPLOADED, parse_queued_at=None)
        .values_list("project__owner_id", flat=True)
        .distinct()
    )
    admitted = {}
    for owner_id in list(owners):
        if ids := parses_admit(owner_id=owner_id):
            admitted[owner_id] = ids
    return admitted


def parse_places(*, owner_id: int) -> dict[int, int]:
    """Each of the account's waiting documents: its place in the account's line (1: the
    next to be queued), what the project page shows."""
    waiting = _parses_waiting(owner_id).values_list("pk", flat=True)
    return {document_id: place for place, document_id in enumerate(waiting, start=1)}
