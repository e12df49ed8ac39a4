"""API tokens in a real headless Chromium: a customer creates a token on the account's API
tokens page, sees it once, calls /v1 with it, and revokes it."""

import urllib.error
import urllib.request

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def models_status(live_server, token: str) -> int:
    request = urllib.request.Request(
        f"{live_server.url}/v1/models", headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_customer_creates_a_token_sees_it_once_and_revokes_it(
    page, live_server, log_in, screenshot
):
    log_in()

    page.get_by_role("link", name="API tokens").click()
    page.get_by_label("Token name").fill("notebook")
    expect(page.get_by_label("read: list and download")).to_be_checked()  # least by default
    expect(page.get_by_label("train: upload")).not_to_be_checked()
    page.get_by_label("Expires").select_option(label="in 30 days")
    page.get_by_label("Your password").fill("pw-alice-1")
    page.get_by_role("button", name="Create token").click()
    token = page.get_by_label("Your new token").input_value()
    expect(page.get_by_role("status", name="New token")).to_contain_text("shown only this once")
    screenshot("api-token-created")
    assert token.startswith("sk-sleuth-")
    assert models_status(live_server, token) == 200

    page.get_by_role("link", name="API tokens").click()
    expect(page.locator("#api-tokens")).to_contain_text("notebook")
    expect(page.locator("#api-tokens .token-scopes")).to_have_text("read, chat")
    expect(page.locator("#api-tokens")).to_contain_text(token[:16])
    assert token not in page.content()

    page.get_by_role("button", name="Revoke notebook").click()
    expect(page.get_by_text("no longer works")).to_be_visible()
    expect(page.locator("#api-tokens")).to_contain_text("revoked")
    screenshot("api-token-revoked")
    assert models_status(live_server, token) == 401
