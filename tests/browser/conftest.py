"""What the browser tests share: alice, a customer, and signing her in through the login page."""

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
