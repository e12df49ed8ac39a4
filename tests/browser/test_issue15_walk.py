"""Issue 15's walk, end to end in a real headless Chromium on the real services: a customer
uploads two filings → the worker parses and indexes them → she searches them on the search
page → generates questions from their tables, reviews the draft (deletes a line, edits one)
and accepts it → starts a quick run on that set with the suite's tiny model → the run
succeeds and publishes its agent → she asks it a question in the playground, beside the echo
baseline → gives a thumbs-down with the correct answer → the question, with her answer, is in
the project's "From the playground" set.

A real Celery worker parses, indexes, generates and trains (celery_worker, whose allowlist
holds the tiny model); a real inference worker answers in the playground (test_api_chat's)."""

import re
import time

import pytest
from playwright.sync_api import expect

from corpora.models import QuestionSet
from runs.models import Run
from runs.presets import PRESETS
from tests.helpers.documents import STATEMENTS, filing_file
from tests.helpers.serving import worker

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

# The operator's quick preset, tuned for the tiny model: a long cold start on the scripted
# teacher's trajectories teaches it the search protocol (as test_api_chat's agent learns it).
TINY_QUICK = {"sft_epochs": 150, "sft_lr": 3e-3, "scope_drills": 0, "lr": 1e-4}
RUN_MINUTES = 15  # a couple of minutes alone; more on 2 cores shared with other training


@pytest.fixture
def inference_worker(django_db_setup, tmp_path, tiny_model):
    """A real Celery worker on the "inference" queue, as `make run` starts one."""
    with worker(
        "walk-inference",
        "inference",
        "threads",
        tmp_path / "inference.log",
        SLEUTH_WORK_DIR=str(tmp_path / "inference-work"),
        SLEUTH_ALLOWED_MODELS=f"default,{tiny_model}",
    ) as process:
        yield process


def reload_until(page, locator, seconds: float) -> None:
    """Reload the page until `locator` shows (what a customer's refresh does)."""
    deadline = time.monotonic() + seconds
    while not locator.count():
        assert time.monotonic() < deadline, f"{locator} did not appear within {seconds:.0f} s"
        time.sleep(1)
        page.reload()


def test_upload_search_generate_review_run_playground_correction(
    page,
    live_server,
    log_in,
    alice,
    celery_worker,
    inference_worker,
    tiny_model,
    knob,
    monkeypatch,
    wait_for_uploads,
    screenshot,
    tmp_path,
):
    knob("SLEUTH_ALLOWED_MODELS", ["default", tiny_model])  # the operator offers the tiny model
    quick = PRESETS["quick-cpu"]
    monkeypatch.setitem(quick, "config", {**quick["config"], **TINY_QUICK})
    filings = []
    for entity, text in STATEMENTS.items():
        upload = filing_file(entity, text)
        filings.append(tmp_path / upload.name)
        filings[-1].write_bytes(upload.read())
    log_in()

    # Upload: a new project, two filings dropped on it; the worker parses and indexes them.
    page.get_by_label("New project").fill("Filings walk")
    page.get_by_role("button", name="Create project").click()
    project_url = page.url
    page.locator("#id_files").set_input_files([str(path) for path in filings])
    wait_for_uploads(len(filings))
    expect(page.locator("#documents .status-indexed")).to_have_count(len(filings), timeout=180_000)
    expect(page.locator("#documents")).to_contain_text("ACME_10K.jsonl")
    expect(page.locator("#documents")).to_contain_text("GLOBEX_10K.jsonl")

    # Search: a scoped query shows the chunks the agent would see, with document and page.
    page.get_by_role("link", name="Search these documents").click()
    page.get_by_label("Search").fill("[acme] net income")
    page.get_by_role("button", name="Search").click()
    results = page.locator("#results .trajectory")
    expect(results.first).to_contain_text("ACME_10K.jsonl")
    expect(results.first.get_by_role("link", name="page 60")).to_be_visible()
    expect(results.first).to_contain_text("Net income")
    expect(page.locator("#results")).not_to_contain_text("GLOBEX")
    screenshot("walk-01-search")

    # Generate questions: a draft set arrives for review.
    page.goto(project_url)
    page.get_by_role("button", name="Generate questions from my documents").click()
    # Queued, or, when the worker was quicker than the redirect, already a draft (as in
    # test_question_review_page.py: a loaded machine renders the redirect after the worker).
    expect(
        page.locator("#question-generation")
        .get_by_text("Generating questions…")
        .or_(page.get_by_text("Draft: review before a run uses it"))
        .first
    ).to_be_visible()
    reload_until(page, page.get_by_text("Draft: review before a run uses it"), 120)
    question_set = QuestionSet.objects.get(project__owner=alice)
    count = question_set.questions.count()
    assert count >= 4, count

    # Review: delete a line, edit another, accept the set.
    page.get_by_role("link", name=question_set.name).click()
    expect(page.locator("#draft-review")).to_contain_text("Draft: review before a run uses it")
    rows = page.locator("#questions tbody tr")
    expect(rows).to_have_count(count)
    deleted = rows.first.locator("td").nth(1).inner_text()
    rows.first.get_by_role("button", name="Delete").click()
    expect(rows).to_have_count(count - 1)
    expect(page.locator("#questions")).not_to_contain_text(deleted)
    rows.first.get_by_text("Edit", exact=True).click()
    rows.first.get_by_label("Question").fill("What was Acme's net income in 2018?")
    rows.first.get_by_label("Answer").fill("$5,363 million")
    rows.first.get_by_role("button", name="Save").click()
    expect(rows.first).to_contain_text("What was Acme's net income in 2018?")
    screenshot("walk-02-review")
    page.get_by_role("button", name="Accept all").click()
    expect(page.locator(".messages")).to_contain_text("runs can use it now")
    expect(page.get_by_text("Draft: review before a run uses it")).to_have_count(0)

    # Run: the quick preset on the reviewed set, with the tiny model and one RL step.
    page.goto(project_url)
    page.get_by_role("link", name="New run").click()
    page.get_by_label("Run name").fill("Walk agent")
    page.get_by_role("combobox", name="Questions").select_option(label=question_set.name)
    page.get_by_label("Quick CPU demo").check()
    # Her documents look like filings, so the form offers the filings pack; she keeps the
    # default path here: the pack's rules hold a scope to pieces of the question's words,
    # which the tiny test model's whole-word vocabulary cannot write (runs with the pack:
    # tests/engine/test_training_cli.py, tests/platform/test_run_pages.py).
    expect(page.get_by_label("Domain pack")).to_have_value("filings")
    page.get_by_label("Domain pack").select_option("")
    page.get_by_text("Advanced options").click()
    page.get_by_role("spinbutton", name="RL steps").fill("1")
    page.locator("#id_model").select_option(tiny_model)
    page.get_by_role("button", name="Start run").click()
    expect(page.get_by_role("heading", name="Walk agent")).to_be_visible()
    status = page.locator("#run-status")
    expect(status).to_have_text(re.compile("Succeeded|Failed"), timeout=RUN_MINUTES * 60_000)
    run = Run.objects.get(project__owner=alice)
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    assert run.question_set_id == question_set.pk
    screenshot("walk-03-run")

    # Published: the final checkpoint has its agent folder, and the run page links to it.
    assert run.checkpoints.get(is_final=True).published_prefix
    page.reload()
    page.get_by_role("link", name="Try the agent in the playground").click()
    expect(page.get_by_role("heading", name="Playground")).to_be_visible()

    # Playground: she asks; the agent's search (query, then what it found) and its answer
    # appear beside the echo baseline's.
    question = "What was Acme's net income in 2018?"
    page.get_by_label("Question").fill(question)
    page.get_by_label("Side by side with").select_option("echo")
    page.get_by_role("button", name="Ask").click()
    agent = page.locator('.playground-column[data-role="agent"]')
    echo = page.locator('.playground-column[data-role="comparison"]')
    expect(agent).to_have_attribute("data-status", "done", timeout=180_000)
    expect(agent.locator(".playground-search").first).to_contain_text("Searched")
    expect(agent.locator(".playground-query").first).not_to_be_empty()
    # What it found (a hit with its document and page, or "nothing found"): the tiny model's
    # ~100-word vocabulary reads most of these filings' words as unknown.
    expect(agent.locator(".playground-hits").first).to_be_visible()
    expect(agent.locator(".playground-answer h4")).to_have_text("Answer")
    expect(agent.locator(".playground-answer-text")).to_be_visible()
    expect(agent.locator(".playground-usage")).to_contain_text(
        re.compile(r"\d+ prompt \+ \d+ completion tokens · [1-9]\d* search")
    )
    expect(echo.locator(".playground-query")).to_have_text(question)
    expect(echo.locator(".playground-hit").first).to_contain_text("ACME_10K.jsonl · page 60")
    expect(echo.locator(".playground-hit").first).to_contain_text("Net income $5,363")
    screenshot("walk-04-playground")

    # Thumbs-down with the correct answer: the question joins "From the playground".
    agent.get_by_text("👎 Wrong").click()
    agent.get_by_label("The correct answer").fill("$5,363 million")
    agent.get_by_role("button", name="Add to the question set").click()
    added = agent.locator(".playground-added")
    expect(added).to_contain_text("Added to From the playground with the answer “$5,363 million”")
    added.get_by_role("link", name="From the playground").click()
    expect(page.locator("#questions")).to_contain_text(question)
    expect(page.locator("#questions")).to_contain_text("$5,363 million")
    feedback = QuestionSet.objects.get(project=run.project, name="From the playground")
    assert [(q.question, q.answer) for q in feedback.questions.all()] == [
        (question, "$5,363 million")
    ]
    screenshot("walk-05-from-the-playground")
