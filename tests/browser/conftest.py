"""What the browser tests share: alice, a customer, and signing her in through the login page."""

import os
import time

import pytest
from playwright.sync_api import expect


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(email="alice@example.com", password="pw-alice-1")


@pytest.fixture
def log_in(page, live_server, alice):
    """log_in(): alice signs in as a customer does, and lands on her projects."""

    def sign_in() -> None:
        page.goto(f"{live_server.url}/accounts/login/")
        page.get_by_label("Email").fill("alice@example.com")
        page.get_by_label("Password").fill("pw-alice-1")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    return sign_in


@pytest.fixture(autouse=True)
def site_url_is_the_live_server(request, settings):
    """Mailed links are on `SITE_URL` (never the request's host): in a browser test the site
    is the live server."""
    if "live_server" in request.fixturenames:
        settings.SITE_URL = request.getfixturevalue("live_server").url


# How long a test's end waits for the suite's worker to finish with the files it uploaded.
SETTLE_SECONDS = 15


@pytest.fixture(autouse=True)
def uploads_settle_before_the_database_is_emptied(request):
    """A browser test that uploads files ends as soon as the page shows them. When this
    process's Celery worker runs (an earlier test started it), it is still parsing and
    indexing them, and its transactions can deadlock the flush that empties the database
    after the test (the next test then finds the last one's user). So the test's end waits,
    briefly, until no document is left to parse or index; a parse stuck longer is the sweep's
    business, not this teardown's. Only documents whose parse was queued count: those a test
    makes parsed or waiting by hand have no task behind them."""
    if "live_server" not in request.fixturenames:
        yield
        return
    request.getfixturevalue("transactional_db")  # torn down after this fixture: the flush
    yield
    from corpora.models import Document
    from tests.helpers.runs import WORKER_RUNNING

    if not os.environ.get(WORKER_RUNNING):
        return

    pending = Document.objects.filter(
        status__in=[Document.Status.UPLOADED, Document.Status.PARSED],
        parse_queued_at__isnull=False,
    )
    deadline = time.monotonic() + SETTLE_SECONDS
    while pending.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
