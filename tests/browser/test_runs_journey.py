"""The whole customer journey on the real services, in a real headless Chromium: join the
waitlist → an admin invites → sign up → upload the FinanceBench PDFs → upload their
questions → start a quick run → watch it progress → download the checkpoint.

A real Celery worker parses the filings and trains. In the suite the run's model is a tiny
randomly initialized one (added to the operator's model allowlist by the test and picked in
the advanced options), so the journey takes a couple of minutes; with `SLEUTH_JOURNEY=1` it
trains the default model (SmolLM2-135M on CPU) for one RL step instead: 17 minutes on 2 busy
shared cores. Screenshots of every main page are saved to test-artifacts/journey-*.png."""

import json
import os
import re
import tarfile
from pathlib import Path

import pytest
from playwright.sync_api import expect

from runs.models import Run

DEFAULT_MODEL = os.environ.get("SLEUTH_JOURNEY") == "1"

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATASET = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev"
RUN_MINUTES = 25  # the worst case seen on 2 shared cores, with room to spare


def questions_about_the_pdfs(folder: Path) -> Path:
    """The dataset's questions whose filing is one of the PDFs (13 of them), as a JSONL file."""
    pdfs = {p.stem for p in (DATASET / "pdfs").glob("*.pdf")}
    lines = (DATASET / "questions.jsonl").read_text().splitlines()
    kept = [line for line in lines if line.strip() and json.loads(line)["doc"] in pdfs]
    path = folder / "financebench-pdf-questions.jsonl"
    path.write_text("\n".join(kept) + "\n")
    return path


@pytest.mark.skipif(not DATASET.is_dir(), reason="shared datasets are not beside the clone")
def test_waitlist_to_a_trained_checkpoint_in_the_browser(
    page,
    live_server,
    screenshot,
    mailoutbox,
    django_user_model,
    celery_worker,
    tiny_model,
    wait_for_uploads,
    tmp_path,
    settings,
):
    # The operator offers the tiny model beside the default (no customer can type a path).
    # The suite's worker has the tiny model on its allowlist too (it checks it again).
    settings.SLEUTH_ALLOWED_MODELS = ["default", tiny_model]
    # A visitor joins the waitlist.
    page.goto(live_server.url)
    screenshot("journey-01-landing")
    page.get_by_label("Email").fill("ann@acme.com")
    page.get_by_label("Company").fill("Acme Capital")
    page.get_by_label("What do you want to search?").fill("10-K filings of the companies we cover")
    page.get_by_role("button", name="Join the waitlist").click()
    expect(page.get_by_role("status")).to_contain_text("ann@acme.com is on the waitlist")

    # An admin invites her from the Django admin.
    django_user_model.objects.create_superuser(email="admin@sleuth.dev", password="admin-pass-1")
    page.goto(f"{live_server.url}/admin/")
    page.get_by_label("Email").fill("admin@sleuth.dev")
    page.get_by_label("Password").fill("admin-pass-1")
    page.get_by_role("button", name="Log in").click()
    page.goto(f"{live_server.url}/admin/waitlist/waitlistentry/")
    page.get_by_role("checkbox", name="Select this object for an action - ann@acme.com").check()
    page.get_by_role("combobox", name="Action").select_option("send_beta_invite")
    page.get_by_role("button", name="Go").click()
    expect(page.get_by_text("Sent 1 invite(s).")).to_be_visible()
    page.context.clear_cookies()

    # She signs up through the link in the email.
    page.goto(re.search(r"http://\S+/accounts/signup/\S+/", mailoutbox[-1].body)[0])
    page.get_by_label("Your name").fill("Ann")
    page.locator("#id_password1").fill("a-long-passphrase-9")
    page.locator("#id_password2").fill("a-long-passphrase-9")
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name="Projects")).to_be_visible()

    # She uploads the filings; a worker parses them.
    page.get_by_label("New project").fill("FinanceBench filings")
    page.get_by_role("button", name="Create project").click()
    pdfs = sorted((DATASET / "pdfs").glob("*.pdf"))
    page.locator("#id_files").set_input_files([str(p) for p in pdfs])
    # Six PDFs through Django to S3: seconds alone, over a minute on a loaded 2-core CI box.
    wait_for_uploads(len(pdfs), timeout_s=180)
    readable = "#documents .status-parsed, #documents .status-indexed"  # indexed once parsed
    expect(page.locator(readable)).to_have_count(len(pdfs), timeout=240_000)

    # And the questions about them.
    page.locator("#id_question_file").set_input_files(str(questions_about_the_pdfs(tmp_path)))
    page.get_by_role("button", name="Import questions").click()
    expect(page.get_by_text("Imported 13 questions")).to_be_visible()
    screenshot("journey-02-project")

    # She starts a quick run, one RL step to keep it short, after previewing the reward.
    page.get_by_role("link", name="New run").click()
    page.get_by_label("Run name").fill("First agent")
    page.get_by_role("combobox", name="Questions").select_option(
        label="financebench-pdf-questions.jsonl"
    )
    page.get_by_label("Quick CPU demo").check()
    page.get_by_text("Advanced options").click()
    page.get_by_role("spinbutton", name="RL steps").fill("1")
    if not DEFAULT_MODEL:
        page.locator("#id_model").select_option(tiny_model)
    page.get_by_label("Pick a question").select_option(index=1)
    page.get_by_label("Sample answers, one per line").fill("I don't know")
    page.get_by_role("button", name="Preview rewards").click()
    expect(page.locator("#reward-preview-table tbody tr")).to_have_count(1)
    screenshot("journey-03-new-run")
    page.get_by_role("button", name="Start run").click()
    expect(page.get_by_role("heading", name="First agent")).to_be_visible()

    # She watches it: the page moves through the stages by itself and draws the curves.
    status = page.locator("#run-status")
    # (The tiny model's stages can take less than the page's 2 s poll: any later one will do.)
    expect(status).not_to_have_text("Queued", timeout=120_000)
    screenshot("journey-04-run-started")
    expect(status).to_have_text(
        re.compile("Evaluating|Publishing|Succeeded|Failed"), timeout=RUN_MINUTES * 60_000
    )
    expect(page.locator("figure.chart.has-data").first).to_be_visible(timeout=30_000)
    expect(status).to_have_text(re.compile("Succeeded|Failed"), timeout=RUN_MINUTES * 60_000)
    run = Run.objects.get()
    assert run.status == Run.Status.SUCCEEDED, run.status_reason
    expect(page.locator("#validation")).to_contain_text("Trained agent")
    expect(page.locator("#validation")).to_contain_text("One-shot BM25")
    page.get_by_role("button", name="Latest").click()
    expect(page.locator("#samples .trajectory").first).to_be_visible()
    screenshot("journey-05-run-finished")

    # And downloads the trained checkpoint.
    with page.expect_download(timeout=120_000) as download_info:
        page.locator("#checkpoints").get_by_role("link", name="Download").click()
    with tarfile.open(download_info.value.path()) as archive:
        names = archive.getnames()
    assert any(name.endswith("config.json") for name in names), names
