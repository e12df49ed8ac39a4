"""The public pages in a real headless Chromium."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_landing_page_says_what_sleuth_does(page, live_server, screenshot):
    page.goto(live_server.url)

    assert page.title() == "Sleuth"
    assert page.get_by_role("heading", level=1).inner_text() == (
        "Search agents trained on your documents"
    )
    screenshot("landing")
