"""Run pages in a real headless Chromium: preview the reward and start a run; follow a run
live while a worker (played here by the test, writing what the trainer writes) reports
steps, events, samples and a checkpoint; download the checkpoint; cancel."""

import json
import re

import pytest
from django.conf import settings
from playwright.sync_api import expect

from core.s3 import s3_client
from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from runs.models import Checkpoint, Run
from runs.presets import preset_config
from tests.helpers.pages import step_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVAL_REPORT = {
    "policies": {
        "echo": {"answer_score": 0.1, "golden_recall": 0.15, "pass@k": 0.1, "n": 20},
        "base": {"answer_score": 0.0, "golden_recall": 0.05, "pass@k": 0.0, "n": 20},
        "final": {"answer_score": 0.45, "golden_recall": 0.6, "pass@k": 0.55, "n": 20},
    }
}
# What a run's own evaluation writes (`evaluate_run`): echo@K given the agent's chunk count.
_RUN_METRICS = {"pass@k": 0.0, "searches_after_miss": 1.0, "retrieved_chunks": 4.6, "n": 20}
RUN_EVAL_REPORT = {
    "policies": {
        "trained": _RUN_METRICS | {"accuracy": 0.12, "answer_score": 0.3, "golden_recall": 0.55},
        "base": _RUN_METRICS | {"accuracy": 0.0, "answer_score": 0.1, "golden_recall": 0.0},
        "echo@5": _RUN_METRICS | {"accuracy": 0.05, "answer_score": 0.2, "golden_recall": 0.25},
        "cold-start": _RUN_METRICS | {"accuracy": 0.1, "answer_score": 0.3, "golden_recall": 0.55},
    },
    "echo_k": 5,
    "questions": 20,
    "rl_share": {  # the trained agent less the same run's cold start
        "recall": {"mean": 0.0, "low": 0.0, "high": 0.0, "n": 20},
        "accuracy": {"mean": 0.02, "low": -0.05, "high": 0.1, "n": 20},
    },
}


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
    question_set = QuestionSet.objects.create(
        project=project, name="qa.jsonl", s3_key=f"projects/{project.pk}/qa.jsonl", size=3
    )
    for position, (question, answer) in enumerate(
        [
            ("What is Adobe's FY2022 operating margin?", "34.6%"),
            ("Did Adobe buy back shares in FY2022?", "Yes"),
            ("What was Adobe's FY2022 revenue?", "$17.61 billion"),
        ],
        start=1,
    ):
        Question.objects.create(
            question_set=question_set, position=position, question=question, answer=answer
        )
    return project


def test_a_customer_previews_the_reward_and_starts_a_run(
    page, live_server, project, screenshot, celery_worker, log_in
):
    log_in()
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.get_by_role("link", name="New run").click()
    expect(page.get_by_role("heading", name="New run")).to_be_visible()
    page.get_by_label("Run name").fill("Margins")
    page.get_by_role("combobox", name="Questions").select_option(label="qa.jsonl")
    expect(page.get_by_label("Quick CPU demo")).to_be_checked()
    page.get_by_text("Advanced options").click()
    page.get_by_role("spinbutton", name="RL steps").fill("3")

    # She checks what the reward pays for, on a question from her set.
    page.get_by_label("Pick a question").select_option(
        label="What is Adobe's FY2022 operating margin?"
    )
    page.get_by_label("Sample answers, one per line").fill(
        "34.6%\nThe operating margin cannot be determined 🙂"
    )
    page.get_by_role("button", name="Preview rewards").click()
    rows = page.locator("#reward-preview-table tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first.locator("td").nth(1)).to_have_text("1.00")
    expect(rows.nth(1).locator("td").nth(2)).to_have_text("0.00")  # correctness
    screenshot("run-new-reward-preview")

    page.get_by_role("button", name="Start run").click()
    expect(page.get_by_role("heading", name="Margins")).to_be_visible()
    # A worker left running by an earlier test of the session may already have picked the
    # run up (and failed it: this project's document has no text on S3), so the status is
    # whatever it reached; the event says it was queued as asked.
    expect(page.locator("#run-status")).to_have_text(re.compile("Queued|Preparing|Failed"))
    expect(page.locator("#events")).to_contain_text("Queued (Quick CPU demo, 3 steps).")
    assert Run.objects.get().config["steps"] == 3


def test_the_run_page_follows_training_live_and_downloads_the_checkpoint(
    page, live_server, project, screenshot, log_in
):
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="Margins",
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.TRAINING,
        total_steps=2,
    )
    step_done(run, 1, reward=0.2)
    log_in()
    page.goto(f"{live_server.url}/runs/{run.pk}/")

    expect(page.locator("#run-status")).to_have_text("Training")
    expect(page.locator("#run-step")).to_have_text("step 1 of 2")
    expect(page.locator("figure.chart.has-data")).not_to_have_count(0)
    expect(page.locator("#samples .chunk.golden")).to_have_text("ADBE-p54-c2 ★ golden")

    # The worker finishes a step, evaluates, saves a checkpoint and succeeds; the page follows.
    step_done(run, 2, reward=0.6)
    key = f"projects/{run.project_id}/runs/{run.pk}/published/final.tar.gz"  # its own folder
    s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key, Body=b"model files")
    Checkpoint.objects.create(
        run=run,
        step=2,
        s3_prefix=key,
        metrics={"val/accuracy": 0.45, "val/golden_recall": 0.6, "val/pass@4": 0.55},
        archive_key=key,
        is_final=True,
        size_bytes=11,
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, eval_report=RUN_EVAL_REPORT)

    expect(page.locator("#run-status")).to_have_text("Succeeded", timeout=15_000)
    expect(page.locator("#events")).to_contain_text("Step 2 done: reward 0.60.")
    expect(page.locator("#validation tbody tr").first).to_contain_text("Trained agent")
    expect(page.locator("#validation")).to_contain_text("One-shot BM25 (the question as the query)")
    expect(page.locator("#verdict")).to_contain_text(
        "Given the same 5 chunks as one-shot BM25 (the question as the query), the trained agent "
        "found 2.20× the golden evidence it found (55.0% against 25.0%), and it answered "
        "12.0% of the questions correctly against 5.0%"
    )
    expect(page.locator("#validation tbody tr").nth(1)).to_contain_text(
        "The same run before RL (its cold start alone)"
    )
    expect(page.locator("#rl-share")).to_contain_text(
        "RL's share of this run: +0.0 points of recall [+0.0 points, +0.0 points] and +2.0 "
        "points of accuracy [-5.0 points, +10.0 points], 95 % intervals over these 20 "
        "questions: not told from chance."
    )
    expect(page.locator("#charts")).to_have_attribute("data-steps", "2", timeout=15_000)
    expect(page.locator("#charts figcaption")).to_contain_text(
        ["Reward", "KL and entropy", "RL's groups: tied, held back, retired"]
    )
    expect(page.get_by_role("button", name="Cancel run")).to_have_count(0)
    page.get_by_role("button", name="Latest").click()
    expect(page.locator("#sample-step")).to_have_value("2")
    screenshot("run-dashboard")

    with page.expect_download() as download_info:
        page.locator("#checkpoints").get_by_role("link", name="Download").click()
    download = download_info.value
    assert download.suggested_filename == "final.tar.gz"
    assert open(download.path(), "rb").read() == b"model files"


def test_a_queued_run_can_be_cancelled_from_its_page(page, live_server, project, log_in):
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="Oops",
        config=preset_config("quick-cpu").to_dict(),
        total_steps=4,
    )
    log_in()
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    asked: list[str] = []

    def answer(accept: bool):
        def handle(dialog):
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return handle

    # Asked first (under the page's CSP, which runs no inline handler); "no" keeps the run.
    page.once("dialog", answer(False))
    page.get_by_role("button", name="Cancel run").click()
    for _ in range(50):  # the dialog comes at once on a quiet machine; the suite's is busy
        if asked:
            break
        page.wait_for_timeout(200)
    page.wait_for_timeout(300)  # what "no" would have sent, had it sent anything
    run.refresh_from_db()
    assert asked == ["Cancel this run? It stops after the current step."]
    assert not run.cancel_requested

    page.once("dialog", answer(True))
    page.get_by_role("button", name="Cancel run").click()

    expect(page.locator("#run-status")).to_have_text("Cancelled")
    expect(page.locator("#events")).to_contain_text("Cancel requested.")
    assert len(asked) == 2


def test_the_landing_page_shows_measured_numbers(page, live_server, settings, tmp_path, screenshot):
    published = tmp_path / "eval.json"
    published.write_text(json.dumps(EVAL_REPORT))
    settings.SLEUTH_PUBLISHED_EVAL = str(published)  # the operator's choice, never a run

    page.goto(live_server.url)

    expect(page.locator("#claim #validation tbody tr")).to_have_count(3)
    expect(page.locator("#claim")).to_contain_text("Base model, untrained")
    screenshot("landing-with-numbers")
