"""Stranded work (issue 16.4): nothing waits forever. A run or document whose task never
reached a worker (the broker was down, or lost it) is queued again by the sweep once its
deadline passes; a run on a queue no worker serves, and a document that never gets read,
fail after a few tries with a reason the customer can act on. Real Postgres, Redis (stopped
and started by the test) and S3 from the test stack."""

import base64
import json
import uuid
from datetime import timedelta

import pytest
import redis
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from corpora.models import Document
from corpora.parse_deadlines import documents_sweep
from corpora.services import document_upload, project_create
from devstack.pytest_plugin import _STACK
from devstack.redis import EmbeddedRedis
from runs import sweep
from runs.models import Run
from runs.services import run_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def broker_down(request):
    """The session's Redis stopped for the test, started again after it."""
    entry = request.config.stash.get(_STACK, None)
    services = entry[0].services if entry else []
    server = next((s for s in services if isinstance(s, EmbeddedRedis)), None)
    if server is None:
        pytest.skip("Redis is not the test stack's own (REDIS_URL set)")
    server.stop()
    try:
        yield server
    finally:
        server.start()


@pytest.fixture
def private_queue(knob):
    """A queue no worker serves, for the run stages; its messages are read back here."""
    name = f"test-stranded-{uuid.uuid4().hex[:8]}"
    knob("SLEUTH_INGEST_QUEUE", name)
    knob("SLEUTH_TRAIN_QUEUE", name)
    yield name
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(name)


def queued_tasks(queue: str) -> list[tuple[str, list]]:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    tasks = []
    for raw in client.lrange(queue, 0, -1):
        message = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
        tasks.append((message["headers"]["task"], args))
    return tasks


def deadline_passes(model, pk: int, field: str) -> None:
    model.objects.filter(pk=pk).update(**{field: timezone.now() - timedelta(seconds=1)})


@pytest.fixture
def project(alice):
    project = project_create(owner=alice, name="Filings")
    Document.objects.create(
        project=project,
        name="doc.txt",
        kind="text",
        content_type="text/plain",
        size=10,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/documents/0/doc.txt",
        status=Document.Status.PARSED,
    )
    return project


def start_run(project, user) -> Run:
    return run_create(project=project, user=user, name="r", question_set=None, preset="quick-cpu")


def test_a_run_started_while_the_broker_is_down_is_queued_with_a_pick_up_deadline(
    project, alice, broker_down
):
    run = start_run(project, alice)

    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED
    assert run.lease_expires_at > timezone.now()


def test_the_sweep_queues_a_run_whose_task_never_reached_the_broker(
    project, alice, private_queue, request
):
    server = request.getfixturevalue("broker_down")
    run = start_run(project, alice)
    server.start()
    deadline_passes(Run, run.pk, "lease_expires_at")

    assert sweep.runs_sweep() == [run.pk]

    # (A publish retried across the restart may queue it twice: the claim takes it once.)
    assert ("config.tasks.run_prepare", [run.pk]) in queued_tasks(private_queue)
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED and run.lease_expires_at > timezone.now()


def handed_off_run(project, alice, status=Run.Status.TRAINING) -> Run:
    """A run its last stage handed to the next one, whose task no worker took."""
    return Run.objects.create(
        project=project,
        created_by=alice,
        name="r",
        status=status,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )


def test_a_run_on_a_queue_no_worker_serves_fails_with_that_reason_after_a_few_requeues(
    project, alice, private_queue
):
    run = handed_off_run(project, alice)

    for _ in range(settings.SLEUTH_RUN_MAX_REQUEUES + 1):
        sweep.runs_sweep()
        deadline_passes(Run, run.pk, "lease_expires_at")

    run.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert run.status_reason.startswith(f"No worker serves queue {private_queue}")
    assert len(queued_tasks(private_queue)) == settings.SLEUTH_RUN_MAX_REQUEUES


def test_a_run_waiting_on_a_busy_queue_is_requeued_without_a_limit(project, alice, private_queue):
    run = handed_off_run(project, alice)
    sweep.queues_announce([private_queue], ttl_seconds=60)  # a worker serves it, busy

    for _ in range(settings.SLEUTH_RUN_MAX_REQUEUES + 2):
        sweep.runs_sweep()
        deadline_passes(Run, run.pk, "lease_expires_at")

    run.refresh_from_db()
    assert run.status == Run.Status.TRAINING
    assert len(queued_tasks(private_queue)) == settings.SLEUTH_RUN_MAX_REQUEUES + 2


def test_a_held_lease_that_lapsed_while_the_database_was_down_is_swept_a_lease_later(
    project, alice, private_queue, knob
):
    """Its holder could not renew while the database was down: the sweep leaves it until the
    database has been up a lease's length, and meanwhile still queues a run nobody holds."""
    held = handed_off_run(project, alice)
    Run.objects.filter(pk=held.pk).update(lease_owner="a worker cut off by the restart")
    waiting = handed_off_run(project, alice)

    knob("SLEUTH_RUN_LEASE_SECONDS", 10**7)  # the session's Postgres is younger than that
    assert sweep.runs_sweep() == [waiting.pk]
    assert Run.objects.get(pk=held.pk).lease_owner  # still held

    knob("SLEUTH_RUN_LEASE_SECONDS", 1)  # ...and older than this
    assert sweep.runs_sweep() == [held.pk]  # (waiting's new deadline lies ahead)
    assert Run.objects.get(pk=held.pk).lease_owner == ""


def upload(project, name="notes.txt") -> Document:
    text = f"{name}: revenue was 42 million in 2023.\n"
    return document_upload(project=project, file=SimpleUploadedFile(name, text.encode()))


def test_a_document_uploaded_while_the_broker_is_down_is_read_once_the_sweep_requeues_it(
    project, celery_worker, request
):
    server = request.getfixturevalue("broker_down")
    document = upload(project)
    server.start()
    deadline_passes(Document, document.pk, "parse_deadline")

    assert documents_sweep() == [document.pk]

    deadline = timezone.now() + timedelta(seconds=60)
    while Document.objects.get(pk=document.pk).status == Document.Status.UPLOADED:
        assert timezone.now() < deadline, "the requeued parse never ran"
    assert Document.objects.get(pk=document.pk).status == Document.Status.PARSED


def test_a_document_whose_parse_never_finishes_fails_with_a_reason_after_its_last_try(
    project,
):
    document = Document.objects.create(
        project=project,
        name="stuck.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=10,
        sha256="1" * 64,
        s3_key=f"projects/{project.pk}/documents/1/stuck.pdf",
        parse_started_at=timezone.now() - timedelta(minutes=10),  # a killed parse
        parse_deadline=timezone.now() - timedelta(seconds=1),
        parse_requeues=settings.SLEUTH_PARSE_MAX_REQUEUES,
    )

    assert documents_sweep() == [document.pk]

    document.refresh_from_db()
    assert document.status == Document.Status.FAILED
    assert "did not finish" in document.error and "Upload it again" in document.error


def test_a_document_whose_parse_was_killed_is_claimable_again_after_its_deadline(project):
    document = Document.objects.create(
        project=project,
        name="killed.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=10,
        sha256="2" * 64,
        s3_key=f"projects/{project.pk}/documents/2/killed.pdf",
        parse_started_at=timezone.now() - timedelta(minutes=10),
        parse_deadline=timezone.now() - timedelta(seconds=1),
    )

    documents_sweep()

    document.refresh_from_db()
    assert document.status == Document.Status.UPLOADED
    assert document.parse_started_at is None  # the next worker's claim takes it
    assert document.parse_requeues == 1 and document.parse_deadline > timezone.now()
