"""The monthly budget of the operator's judges (issue 68.6) as a customer meets it in a real
headless Chromium: the run form and the judge page say what is used and left, and a preview
past the budget says why where the scores would go (the page's script swaps the 429 in)."""

import pytest
from django.core.cache import cache
from playwright.sync_api import expect

from corpora.services import project_create

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture(autouse=True)
def _fresh_counts():
    cache.clear()


def test_the_budget_is_shown_and_a_preview_past_it_says_why(
    page, live_server, alice, settings, log_in
):
    settings.SLEUTH_JUDGES = {"house": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}
    settings.SLEUTH_JUDGE_CALLS_PER_MONTH = 0  # nothing left: no call reaches the judge
    project = project_create(owner=alice, name="Filings")
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/judge/")
    expect(page.locator("#judge-usage")).to_contain_text("0 of 0 calls to Sleuth's judges used")

    page.goto(f"{live_server.url}/projects/{project.pk}/runs/new/")
    page.get_by_text("Advanced options").click()
    expect(page.locator("#judge-usage")).to_contain_text("0 of 0 calls to Sleuth's judges used")
    page.get_by_label("Answer judge").select_option("house")
    page.locator("[name=question_text]").fill("What is Adobe's FY2022 operating margin?")
    page.get_by_label("Ground truth answer").fill("34.6%")
    page.get_by_label("Sample answers, one per line").fill("34.6%")
    page.get_by_role("button", name="Preview rewards").click()

    expect(page.locator("#reward-preview")).to_contain_text(
        "This preview needs 1 call to the platform's judge"
    )
