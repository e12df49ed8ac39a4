"""Deleting in a real headless Chromium: each Delete link opens a page that says what goes
with the thing, and its button deletes it."""

import pytest
from django.conf import settings
from playwright.sync_api import expect

from core.s3 import s3_client
from corpora.models import Document, Project
from corpora.services import project_create
from runs.models import Run

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project(alice):
    project = project_create(owner=alice, name="Filings")
    key = f"projects/{project.pk}/documents/x/adobe.txt"
    s3_client().put_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key, Body=b"Adobe")
    Document.objects.create(
        project=project,
        name="ADOBE_2022_10K.txt",
        kind="text",
        content_type="text/plain",
        size=5,
        sha256="0" * 64,
        s3_key=key,
        status=Document.Status.PARSED,
    )
    Run.objects.create(project=project, created_by=alice, name="First run", status="succeeded")
    return project


def test_a_customer_deletes_a_document_then_a_run_then_the_project(
    page, live_server, project, screenshot, log_in
):
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/")

    page.locator("#documents").get_by_role("link", name="Delete").click()
    expect(page.get_by_role("heading", name="Delete document?")).to_be_visible()
    screenshot("delete-document-confirm")
    page.get_by_role("button", name="Delete document").click()
    expect(page.get_by_text("Deleted ADOBE_2022_10K.txt.")).to_be_visible()
    expect(page.locator("#documents")).to_contain_text("No documents yet.")

    page.get_by_role("link", name="First run").click()
    page.get_by_role("link", name="Delete run").click()
    page.get_by_role("button", name="Delete run").click()
    expect(page.get_by_text("Deleted the run First run.")).to_be_visible()

    page.get_by_role("link", name="Delete this project").click()
    page.get_by_role("button", name="Delete project").click()
    expect(page.get_by_text("Deleted the project Filings.")).to_be_visible()
    assert not Project.objects.exists() and not Run.objects.exists()


def test_a_customer_deletes_the_account_with_the_password(
    page, live_server, project, alice, log_in
):
    log_in()
    page.goto(f"{live_server.url}/projects/")

    page.get_by_role("link", name="Delete your account").click()
    page.get_by_label("Your password").fill("pw-alice-1")
    page.get_by_role("button", name="Delete account").click()

    expect(page.get_by_text("Your account and everything in it were deleted.")).to_be_visible()
    assert not type(alice).objects.exists() and not Project.objects.exists()
