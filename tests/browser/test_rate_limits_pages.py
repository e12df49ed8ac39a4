"""Per-account limits (issue 68.6) as a customer meets them in a real headless Chromium: a
refused reward preview says why where the scores would go (htmx leaves a 429 unswapped
unless the page's script swaps it), and a refused upload says why next to its file."""

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from corpora.models import Document
from corpora.services import project_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TINY_PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()


def test_a_refused_preview_says_why_where_the_scores_would_go(
    page, live_server, alice, settings, log_in
):
    settings.SLEUTH_PREVIEW_RATE_LIMIT = (0, 600)  # every preview over the limit
    project = project_create(owner=alice, name="Filings")
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/new/")

    page.locator("[name=question_text]").fill("What is Adobe's FY2022 operating margin?")
    page.get_by_label("Ground truth answer").fill("34.6%")
    page.get_by_label("Sample answers, one per line").fill("34.6%")
    page.get_by_role("button", name="Preview rewards").click()

    expect(page.locator("#reward-preview")).to_contain_text(
        "Your account has reached its limit of 0 reward previews per 10 minutes. "
        "Try again in 10 minutes."
    )


def test_a_refused_upload_says_why_next_to_its_file(page, live_server, alice, settings, log_in):
    settings.SLEUTH_UPLOAD_RATE_LIMIT = (1, 3600)
    project = project_create(owner=alice, name="Filings")
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/")

    page.locator("#id_files").set_input_files(
        files=[
            {"name": "first.pdf", "mimeType": "application/pdf", "buffer": TINY_PDF},
            {"name": "second.pdf", "mimeType": "application/pdf", "buffer": TINY_PDF + b"%2\n"},
        ]
    )

    expect(page.locator(".upload-item.done")).to_contain_text("first.pdf")
    expect(page.locator(".upload-item.failed")).to_contain_text(
        "second.pdf was not uploaded: Your account has reached its limit of 1 uploaded files "
        "per hour. Try again in 60 minutes."
    )
    assert list(Document.objects.values_list("name", flat=True)) == ["first.pdf"]
