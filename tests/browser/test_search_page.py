"""The search page in a real headless Chromium (issue 15): documents a worker parsed are
indexed without a run; a customer types a query and sees the chunks the agent would see,
opens a result's page, and reads the echo recall of her question set beside the box."""

import json
import time

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from playwright.sync_api import expect

from corpora.indexing import current_index_prefix
from corpora.models import QuestionSet
from corpora.services import document_upload, project_create, question_set_import

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FILINGS = {
    "ZANZIBAR_2023_10K": [
        "Zanzibar Shipping annual report for fiscal 2023.",
        "Purchases of property, plant and equipment were 41.7 million dollars in 2023.",
    ],
    "QUOKKA_2023_10K": [
        "Quokka Industries annual report for fiscal 2023.",
        "Quokka revenue was 12 million dollars.",
    ],
}
QUESTIONS = [
    {
        "question": "What was Quokka revenue in 2023?",
        "answer": "12 million dollars",
        "evidence": [{"text": "Quokka revenue was 12 million dollars", "doc": "QUOKKA_2023_10K"}],
    },
    {"question": "Who audits Zanzibar?", "answer": "Nobody"},
]


def upload(project, name: str, pages: list[str]) -> None:
    lines = [json.dumps({"doc": name, "page": n, "text": t}) for n, t in enumerate(pages, 1)]
    body = ("\n".join(lines) + "\n").encode()
    document_upload(project=project, file=SimpleUploadedFile(f"{name}.jsonl", body))


def test_type_a_query_see_the_chunks_the_agent_would_see(
    page, live_server, alice, celery_worker, screenshot, log_in
):
    project = project_create(owner=alice, name="Filings")
    log_in()

    # Nothing to search yet: the page says what to do.
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_role("link", name="Search these documents").click()
    expect(page.locator("#search-results")).to_contain_text("upload documents first")

    # Documents and questions arrive; the worker parses and indexes them, no run started.
    for name, pages in FILINGS.items():
        upload(project, name, pages)
    body = "\n".join(json.dumps(q) for q in QUESTIONS) + "\n"
    question_set_import(project=project, file=SimpleUploadedFile("qa.jsonl", body.encode()))
    deadline = time.monotonic() + 180
    while True:
        project.refresh_from_db()
        figure = QuestionSet.objects.get(project=project).echo_recall
        prefix = project.index_prefix
        if prefix and prefix == current_index_prefix(project) == figure.get("index_prefix"):
            break
        assert time.monotonic() < deadline, f"not indexed: {project.index_prefix!r} {figure}"
        time.sleep(0.5)

    # She types a query (the scope in brackets keeps it to Quokka's filing) and sees the chunks.
    page.reload()
    page.get_by_label("Search").fill("[quokka] revenue 2023")
    page.get_by_role("button", name="Search").click()
    results = page.locator("#results .trajectory")
    expect(results.first).to_contain_text("QUOKKA_2023_10K.jsonl")
    expect(results.first).to_contain_text("Quokka revenue was 12 million dollars.")
    expect(page.locator("#results")).not_to_contain_text("ZANZIBAR")
    assert "q=%5Bquokka%5D+revenue+2023" in page.url  # a GET: the address can be shared

    # Beside the box: the echo recall of her question set, what a run has to beat.
    echo = page.locator("#echo-recall")
    expect(echo).to_contain_text(
        "echo recall@5 of qa.jsonl: 1.00 — what a trained agent has to beat"
    )
    expect(echo).to_contain_text("1 of 2 questions had evidence")
    screenshot("search-page")

    # A result links to the text of its page.
    results.first.get_by_role("link", name="page 2").click()
    expect(page.get_by_role("heading", name="QUOKKA_2023_10K.jsonl, page 2")).to_be_visible()
    expect(page.locator("main")).to_contain_text("Quokka revenue was 12 million dollars.")
