"""Generate questions from my documents, in a real headless Chromium (issue 15): a worker
indexes the filings, the customer presses the button, sees "Generating questions…", then a
draft set to review: she deletes one line, edits another, and accepts the set."""

import time

import pytest
from playwright.sync_api import expect

from corpora.indexing import current_index_prefix
from corpora.models import QuestionSet
from corpora.services import document_upload, project_create
from tests.helpers.documents import STATEMENTS, filing_file

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_generate_review_and_accept_a_draft_set(
    page, live_server, alice, celery_worker, screenshot, log_in
):
    project = project_create(owner=alice, name="Filings")
    for entity, text in STATEMENTS.items():
        document_upload(project=project, file=filing_file(entity, text))
    deadline = time.monotonic() + 180
    while True:  # the worker parses and indexes them
        project.refresh_from_db()
        if project.index_prefix and project.index_prefix == current_index_prefix(project):
            break
        assert time.monotonic() < deadline, "the documents were not indexed"
        time.sleep(0.25)
    log_in()

    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_role("button", name="Generate questions from my documents").click()
    # Queued, or, when the worker was quicker than the redirect, already a draft.
    expect(
        page.locator("#question-generation")
        .get_by_text("Generating questions…")
        .or_(page.get_by_text("Draft: review before a run uses it"))
        .first
    ).to_be_visible()
    deadline = time.monotonic() + 120
    while not page.get_by_text("Draft: review before a run uses it").count():
        assert time.monotonic() < deadline, "no draft set appeared"
        time.sleep(0.5)
        refresh = page.get_by_role("link", name="Refresh")
        # Gone from a page loaded after the generation finished: then the draft is there.
        if refresh.count():
            refresh.click()
            page.wait_for_load_state()
    expect(page.get_by_role("button", name="Generate questions from my documents")).to_be_visible()
    screenshot("question-generation-draft")

    question_set = QuestionSet.objects.get(project=project)
    count = question_set.questions.count()
    assert count >= 2
    page.get_by_role("link", name=question_set.name).click()
    expect(page.locator("#draft-review")).to_contain_text("Draft: review before a run uses it")
    expect(page.locator("#question-set-origin")).to_contain_text("offline")
    expect(page.locator("#questions tbody tr")).to_have_count(count)

    # Delete the first line.
    first = page.locator("#questions tbody tr").first
    deleted = first.locator("td").nth(1).inner_text()
    first.get_by_role("button", name="Delete").click()
    expect(page.locator("#questions tbody tr")).to_have_count(count - 1)
    expect(page.locator("#questions")).not_to_contain_text(deleted)

    # Edit the (new) first line.
    row = page.locator("#questions tbody tr").first
    row.get_by_text("Edit", exact=True).click()
    row.get_by_label("Question").fill("What was the net income in the year?")
    row.get_by_label("Answer").fill("42 million dollars")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#questions tbody tr").first).to_contain_text("42 million dollars")
    screenshot("question-review-edited")

    page.get_by_role("button", name="Accept all").click()
    expect(page.locator(".messages")).to_contain_text("runs can use it now")
    expect(page.get_by_text("Draft: review before a run uses it")).to_have_count(0)
    question_set.refresh_from_db()
    assert not question_set.needs_review
    assert question_set.questions.count() == count - 1
    assert question_set.questions.filter(answer="42 million dollars").count() == 1
