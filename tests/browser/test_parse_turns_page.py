"""The project page in a real headless Chromium says which documents wait for their account's
turn to be read (issue 68, item 6: corpora.parse_slots), and moves them up as parses end.

The parses go to a queue of the test's own that no worker reads; the test plays the worker
(takes the next parse task and runs the parse service), and the page, polling, shows it."""

import base64
import json
import uuid

import pytest
import redis
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from corpora.services import document_parse, document_upload, project_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def next_parse(queue: str) -> int:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    while (raw := client.rpop(queue)) is not None:
        message = json.loads(raw)
        if message["headers"]["task"] == "config.tasks.document_parse":
            args, _kwargs, _embed = json.loads(base64.b64decode(message["body"]))
            return args[0]
    raise AssertionError("no parse queued")


def test_documents_past_the_accounts_turns_say_they_wait_and_move_up(
    page, live_server, alice, log_in, knob, screenshot
):
    queue = f"test-parse-{uuid.uuid4().hex[:8]}"
    knob("CELERY_TASK_DEFAULT_QUEUE", queue)
    knob("SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT", 1)
    project = project_create(owner=alice, name="Notes")
    documents = []
    for name in ("first", "second", "third"):
        line = json.dumps({"doc": name, "page": 1, "text": f"{name}: revenue was 4 million."})
        file = SimpleUploadedFile(f"{name}.jsonl", (line + "\n").encode())
        documents.append(document_upload(project=project, file=file))
    log_in()

    page.goto(f"{live_server.url}/projects/{project.pk}/")
    rows = [page.locator(f"#document-{d.pk}") for d in documents]
    expect(rows[0]).to_contain_text("Uploaded")
    expect(rows[0]).not_to_contain_text("Waiting for its turn")
    expect(rows[1]).to_contain_text("Waiting for its turn")
    expect(rows[1]).to_contain_text("next in line")
    expect(rows[2]).to_contain_text("1 ahead of it")
    expect(rows[2].locator(".status-waiting")).to_be_visible()
    screenshot("documents-waiting-for-their-turn")

    # The first is read: the second is queued, the third is next; the page polls.
    document_parse(document_id=next_parse(queue))
    expect(rows[0]).to_contain_text("Parsed", timeout=15_000)
    expect(rows[1]).not_to_contain_text("Waiting for its turn", timeout=15_000)
    expect(rows[2]).to_contain_text("next in line")
    redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)  # and its index build
