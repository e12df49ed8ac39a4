"""The playground in a real headless Chromium (issue 15): from a succeeded run's page the
customer opens its playground, types a question, watches the agent's search (its query and
the chunks it found) and then its answer appear beside the echo baseline, gives a
thumbs-down with the correct answer and sees it added to "From the playground"; then the
same question beside the untrained base model the run started from.

The agent is the tiny model a real run trains and publishes (tests/conftest.py's
`trained_agent`, as for tests/platform/test_api_chat.py), answered by a real inference worker
whose allowlist holds the untrained tiny model, the agent's base."""

from contextlib import contextmanager

import pytest
from playwright.sync_api import expect

from corpora.models import QuestionSet
from runs.models import Run
from tests.helpers.serving import QUESTION, inference_worker_running, publish_for

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def inference_worker(django_db_setup, django_db_blocker, tmp_path_factory, base_model):
    """As tests/platform/test_playground.py's: the suite's inference worker with the untrained
    base (tests/conftest.py's `base_model`) on its allowlist."""
    with inference_worker_running(
        django_db_blocker, tmp_path_factory, SLEUTH_ALLOWED_MODELS=f"default,{base_model}"
    ) as process:
        yield process


@contextmanager
def worker_log_on_failure(process):
    """An answer that never comes fails with what the inference worker did meanwhile."""
    try:
        yield
    except AssertionError as error:
        log = process.log_path.read_text(errors="replace")[-4000:]
        raise AssertionError(f"{error}\n--- the inference worker's log ---\n{log}") from None


@pytest.fixture
def inference_worker_process(request):
    return request.getfixturevalue("inference_worker")


@pytest.fixture
def agent_run(alice, request) -> Run:
    trained = request.getfixturevalue("trained_agent")
    request.getfixturevalue("inference_worker")
    name = publish_for(alice, trained)
    return Run.objects.get(project__owner=alice, checkpoints__published_prefix__endswith=name)


def test_ask_watch_the_search_and_answer_then_correct_it(
    page, live_server, log_in, agent_run, screenshot, settings, inference_worker_process
):
    blocked: list[str] = []  # what the Content-Security-Policy stopped
    page.on(
        "console",
        lambda message: (
            blocked.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    log_in()
    page.goto(f"{live_server.url}/runs/{agent_run.pk}/")
    page.get_by_role("link", name="Try the agent in the playground").click()
    expect(page.get_by_role("heading", name="Playground")).to_be_visible()

    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Side by side with").select_option("echo")
    page.get_by_role("button", name="Ask").click()

    agent = page.locator('.playground-column[data-role="agent"]')
    echo = page.locator('.playground-column[data-role="comparison"]')
    with worker_log_on_failure(inference_worker_process):
        expect(agent.locator(".playground-query").first).to_contain_text("acme", timeout=120_000)
        expect(agent.locator(".playground-hit").first).to_contain_text("acme.txt")
        expect(agent.locator(".playground-answer-text")).to_have_text("seven", timeout=120_000)
    expect(agent.locator(".playground-usage")).to_contain_text("completion tokens")
    expect(echo.locator(".playground-query")).to_have_text(QUESTION)
    expect(echo.locator(".playground-hit").first).to_contain_text("acme.txt")
    screenshot("playground-page")

    agent.get_by_text("👎 Wrong").click()
    agent.get_by_label("The correct answer").fill("seven million dollars")
    agent.get_by_role("button", name="Add to the question set").click()

    expect(agent.locator(".playground-added")).to_contain_text(
        "Added to From the playground with the answer “seven million dollars”"
    )
    question_set = QuestionSet.objects.get(project=agent_run.project)
    assert question_set.name == "From the playground"
    assert [(q.question, q.answer) for q in question_set.questions.all()] == [
        (QUESTION, "seven million dollars")
    ]

    # Past the account's rate limit (the API's), the page says so where the answer would be.
    settings.SLEUTH_API_RATE_LIMIT = (0, 60)
    page.get_by_role("button", name="Ask").click()
    expect(page.locator("#playground-results .playground-error")).to_contain_text(
        "Too many questions"
    )
    assert blocked == []


def test_the_same_question_beside_the_untrained_base_model(
    page, live_server, log_in, agent_run, base_model, settings, inference_worker_process
):
    settings.SLEUTH_ALLOWED_MODELS = ["default", base_model]
    Run.objects.filter(pk=agent_run.pk).update(config={"model": base_model})
    log_in()
    page.goto(f"{live_server.url}/runs/{agent_run.pk}/playground/")

    page.get_by_label("Question").fill(QUESTION)
    page.get_by_label("Side by side with").select_option("base")
    page.get_by_role("button", name="Ask").click()

    agent = page.locator('.playground-column[data-role="agent"]')
    base = page.locator('.playground-column[data-role="comparison"]')
    with worker_log_on_failure(inference_worker_process):
        expect(agent.locator(".playground-answer-text")).to_have_text("seven", timeout=120_000)
    expect(base.locator("h3")).to_have_text("base model: tiny-model, untrained")
    expect(base.locator(".playground-usage")).to_contain_text("completion tokens", timeout=120_000)
    expect(base.locator(".playground-answer-text")).not_to_have_text("seven")
