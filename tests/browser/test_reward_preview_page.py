"""The reward preview in a real headless Chromium (issue 14.3): the form posts, the page
shows that the answers are being scored, and the result replaces it once a real Celery
worker has scored them (htmx polls the preview)."""

import pytest
from playwright.sync_api import expect

from corpora.models import Document
from corpora.services import project_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project(alice):
    project = project_create(owner=alice, name="Filings")
    Document.objects.create(
        project=project,
        name="ADOBE_2022_10K.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=3,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/adobe.pdf",
        status=Document.Status.PARSED,
    )
    return project


def test_a_submitted_preview_shows_its_scores_once_the_worker_has_them(
    page, live_server, project, celery_worker, screenshot, log_in
):
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/runs/new/")

    page.locator("[name=question_text]").fill("What is Adobe's FY2022 operating margin?")
    page.get_by_label("Ground truth answer").fill("34.6%")
    page.get_by_label("Sample answers, one per line").fill("34.6%\nAbout a third")
    page.get_by_role("button", name="Preview rewards").click()

    rows = page.locator("#reward-preview-table tbody tr")
    expect(rows).to_have_count(2, timeout=60_000)
    expect(rows.first.locator("td").nth(1)).to_have_text("1.00")
    expect(page.locator("#reward-preview")).not_to_contain_text("Scoring your sample answers")
    screenshot("reward-preview-scored")
