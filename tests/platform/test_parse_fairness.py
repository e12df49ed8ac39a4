"""One account's uploads cannot delay everyone's parsing (issue 68, item 6): an account has at
most SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT documents queued or being parsed; the rest wait for
their turn in the database and are queued as its parses end, or by the sweep
(corpora.parse_slots).

Real Postgres, Redis (the broker) and S3. Each test sends its parses to a queue of its own that
no worker reads, and plays the worker: it takes the tasks first in, first out, as the broker
hands them out, and runs the parse service each names. What is asserted is what was queued
and claimed, never how long anything took."""

import base64
import json
import threading
import uuid

import pytest
import redis
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.urls import reverse

from corpora import parse_slots
from corpora.models import Document
from corpora.parse_deadlines import documents_sweep
from corpora.services import (
    document_delete,
    document_parse,
    document_upload,
    project_create,
    project_delete,
)
from tests.helpers.documents import pages_file

pytestmark = pytest.mark.django_db(transaction=True)

PARSE = "config.tasks.document_parse"


class Broker:
    """The test's own parse queue on the real broker, read as a worker reads it."""

    def __init__(self, name: str):
        self.name = name
        self.client = redis.Redis.from_url(settings.CELERY_BROKER_URL)

    def _decode(self, raw) -> tuple[str, list]:
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        return message["headers"]["task"], args

    def parses(self) -> list[int]:
        """The documents whose parse is queued, in the order a worker would take them
        (Celery's Redis transport pushes on the left and pops on the right)."""
        queued = [self._decode(raw) for raw in reversed(self.client.lrange(self.name, 0, -1))]
        return [args[0] for task, args in queued if task == PARSE]

    def next_parse(self) -> int | None:
        """Take the next parse task off the queue (index builds it passes are dropped: no
        worker of this test builds indexes)."""
        while (raw := self.client.rpop(self.name)) is not None:
            task, args = self._decode(raw)
            if task == PARSE:
                return args[0]
        return None


@pytest.fixture
def broker(knob):
    """Parses (and the index builds they queue) go to a queue of this test's own."""
    queue = Broker(f"test-parse-{uuid.uuid4().hex[:8]}")
    knob("CELERY_TASK_DEFAULT_QUEUE", queue.name)
    yield queue
    queue.client.delete(queue.name)


def upload(project, name: str, lines: str | None = None) -> Document:
    """A small pages JSONL document (parsed in-process, no sandbox), or `lines` as its body."""
    if lines is not None:
        return document_upload(
            project=project, file=SimpleUploadedFile(f"{name}.jsonl", lines.encode())
        )
    text = [f"{name}: revenue was {len(name)} million dollars in 2023."]
    return document_upload(project=project, file=pages_file(name, name.upper(), text))


def in_flight(user) -> set[int]:
    return set(
        Document.objects.filter(
            project__owner=user, status=Document.Status.UPLOADED, parse_queued_at__isnull=False
        ).values_list("pk", flat=True)
    )


def waiting(user) -> list[int]:
    return list(
        Document.objects.filter(
            project__owner=user, status=Document.Status.UPLOADED, parse_queued_at=None
        )
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )


def test_another_accounts_upload_is_queued_at_once_not_behind_all_of_the_first_ones(
    alice, bob, broker, knob
):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 3)
    alices = [upload(project_create(owner=alice, name="Bulk"), f"a{i}") for i in range(10)]
    bobs = upload(project_create(owner=bob, name="One"), "b0")

    # The broker holds Alice's first three, then Bob's: not all ten of hers before his.
    assert broker.parses() == [d.pk for d in alices[:3]] + [bobs.pk]
    assert waiting(alice) == [d.pk for d in alices[3:]]
    assert bobs.parse_queued_at is not None and waiting(bob) == []

    # The worker takes the tasks first in, first out; each parse that ends queues her next.
    parsed = []
    while (document_id := broker.next_parse()) is not None:
        assert document_parse(document_id=document_id).status == Document.Status.PARSED
        parsed.append(document_id)
        assert len(in_flight(alice)) <= 3 and len(set(broker.parses())) == len(broker.parses())

    assert parsed.index(bobs.pk) == 3  # after three of Alice's, not ten
    assert sorted(parsed) == sorted(d.pk for d in [*alices, bobs])  # each once, none lost
    assert waiting(alice) == [] and in_flight(alice) == set()


def test_two_workers_freeing_slots_at_once_never_queue_past_the_cap(
    alice, broker, knob, monkeypatch
):
    """Two admissions of one account at the same moment (two workers ending two parses):
    each counts the account's parses in flight and pauses until the other has counted too,
    or two seconds, whichever comes first. Counted under the account's lock, the second
    cannot count before the first has queued its documents: it finds no free slot."""
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 3)
    project = project_create(owner=alice, name="Bulk")
    for i in range(8):  # waiting rows, as uploads leave them past the cap
        Document.objects.create(
            project=project,
            name=f"w{i}.txt",
            kind="text",
            content_type="text/plain",
            size=10,
            sha256=f"{i:064d}",
            s3_key=f"projects/{project.pk}/documents/{i}/w{i}.txt",
        )
    both_counted = threading.Barrier(2)
    count = parse_slots._parses_in_flight

    def count_then_pause(owner_id):
        found = count(owner_id)
        try:
            both_counted.wait(timeout=2)
        except threading.BrokenBarrierError:  # the other is held at the lock (or done)
            pass
        return found

    admitted, errors = [], []

    def admit():
        try:
            admitted.append(parse_slots.parses_admit(owner_id=alice.pk))
        except Exception as error:  # reported below, not lost in the thread
            errors.append(error)
        finally:
            connection.close()

    monkeypatch.setattr(parse_slots, "_parses_in_flight", count_then_pause)
    workers = [threading.Thread(target=admit) for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert errors == []
    assert sorted(len(ids) for ids in admitted) == [0, 3]
    assert len(in_flight(alice)) == 3 and len(waiting(alice)) == 5
    assert sorted(broker.parses()) == sorted(in_flight(alice))


def test_a_waiting_document_whose_turn_was_lost_is_queued_by_the_sweep(alice, broker, knob):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 1)
    project = project_create(owner=alice, name="Notes")
    first, second = upload(project, "first"), upload(project, "second")
    assert broker.parses() == [first.pk] and waiting(alice) == [second.pk]
    # The worker recorded the first parse and was killed before it queued the next.
    assert broker.next_parse() == first.pk
    Document.objects.filter(pk=first.pk).update(status=Document.Status.PARSED)
    assert broker.parses() == [] and waiting(alice) == [second.pk]

    documents_sweep()

    assert broker.parses() == [second.pk] and waiting(alice) == []
    assert Document.objects.get(pk=second.pk).parse_deadline is not None  # swept if lost too
    assert document_parse(document_id=broker.next_parse()).status == Document.Status.PARSED


def test_the_sweep_queues_nothing_past_the_cap(alice, broker, knob):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 2)
    project = project_create(owner=alice, name="Notes")
    documents = [upload(project, f"n{i}") for i in range(4)]

    documents_sweep()

    assert broker.parses() == [d.pk for d in documents[:2]]
    assert waiting(alice) == [d.pk for d in documents[2:]]


def _unexpected_error(monkeypatch, document_id: int) -> None:
    from corpora import services

    parse = services._parse_sections

    def breaks(document):
        if document.pk == document_id:
            raise RuntimeError("the worker's own bug")
        return parse(document)

    monkeypatch.setattr(services, "_parse_sections", breaks)


@pytest.mark.parametrize("failure", ["unreadable file", "worker error"])
def test_a_failed_parse_frees_its_slot_for_the_accounts_next(
    alice, broker, knob, monkeypatch, failure
):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 1)
    project = project_create(owner=alice, name="Notes")
    if failure == "unreadable file":
        bad = upload(project, "bad", lines='{"doc": "bad", "page": 1, "text": "ok"}\nnot json\n')
    else:
        bad = upload(project, "bad")
        _unexpected_error(monkeypatch, bad.pk)
    good = upload(project, "good")
    assert broker.parses() == [bad.pk] and waiting(alice) == [good.pk]

    if failure == "unreadable file":
        document_parse(document_id=broker.next_parse())
    else:
        with pytest.raises(RuntimeError):
            document_parse(document_id=broker.next_parse())

    assert Document.objects.get(pk=bad.pk).status == Document.Status.FAILED
    assert broker.parses() == [good.pk] and waiting(alice) == []
    assert document_parse(document_id=broker.next_parse()).status == Document.Status.PARSED


def test_deleting_documents_and_projects_while_they_wait_or_are_queued(alice, broker, knob):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 1)
    notes, other = project_create(owner=alice, name="Notes"), project_create(owner=alice, name="B")
    queued, waits, last = upload(notes, "queued"), upload(notes, "waits"), upload(notes, "last")
    elsewhere = upload(other, "elsewhere")
    assert broker.parses() == [queued.pk]
    assert waiting(alice) == [waits.pk, last.pk, elsewhere.pk]

    document_delete(document=Document.objects.get(pk=waits.pk))  # waiting: nothing to free
    assert broker.parses() == [queued.pk] and waiting(alice) == [last.pk, elsewhere.pk]

    document_delete(document=Document.objects.get(pk=queued.pk))  # its slot goes to the next
    assert broker.parses() == [queued.pk, last.pk] and waiting(alice) == [elsewhere.pk]
    assert document_parse(document_id=broker.next_parse()) is None  # the deleted one's task

    project_delete(project=notes)  # with "last", queued: the other project's turn comes
    assert broker.parses() == [last.pk, elsewhere.pk] and waiting(alice) == []
    assert document_parse(document_id=broker.next_parse()) is None
    assert document_parse(document_id=broker.next_parse()).status == Document.Status.PARSED


def test_the_project_page_says_which_documents_wait_for_their_turn(alice, client, broker, knob):
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 1)
    project = project_create(owner=alice, name="Notes")
    first, second, third = (upload(project, name) for name in ("first", "second", "third"))
    client.force_login(alice)

    html = client.get(reverse("corpora:document_table", args=[project.pk])).content.decode()

    row = {
        d.pk: html.split(f'id="document-{d.pk}"', 1)[1].split("</tr>", 1)[0]
        for d in (first, second, third)
    }
    assert "Waiting for its turn" not in row[first.pk] and "Uploaded" in row[first.pk]
    assert "Waiting for its turn" in row[second.pk] and "next in line" in row[second.pk]
    assert "Waiting for its turn" in row[third.pk] and "1 ahead of it" in row[third.pk]
    assert "read 1 at a time" in row[third.pk]
    assert "every 3s" in html  # the table keeps polling while documents wait
