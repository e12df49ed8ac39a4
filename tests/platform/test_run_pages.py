"""Run pages: new run with presets, options and a reward preview; the live run page (status,
events, curves, validation against baselines, trajectories); cancel; checkpoint downloads
through short-lived presigned URLs; the landing page's published numbers; and owner
isolation over every run URL (alice owns, bob is another customer, charlie is staff)."""

import json
import re
import urllib.request

import pytest
from django.test import override_settings

from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from engine.rewards.reward import COMPONENTS
from runs.models import Checkpoint, Run, TrajectorySample
from tests.helpers.pages import EVAL_REPORT, SAMPLE, make_run, page

pytestmark = pytest.mark.django_db


@pytest.fixture
def question_set(project):
    question_set = QuestionSet.objects.create(
        project=project, name="qa.jsonl", s3_key=f"projects/{project.pk}/qa.jsonl", size=3
    )
    for position, (question, answer) in enumerate(
        [
            ("What was 3M's FY2018 capital expenditure?", "$1577.00"),
            ("Did AMCOR pay a dividend in FY2023?", "Yes"),
            ("What is Adobe's FY2022 operating margin?", "34.6%"),
        ],
        start=1,
    ):
        Question.objects.create(
            question_set=question_set, position=position, question=question, answer=answer
        )
    return question_set


@pytest.fixture
def run(project):
    return make_run(project)


# --- new run -------------------------------------------------------------------------------


def test_the_new_run_page_offers_both_presets_and_the_advanced_options(client_alice, project):
    html = page(client_alice.get(f"/projects/{project.pk}/runs/new/"))

    assert "Quick CPU demo" in html and "Standard (GPU)" in html
    for label in ("Model", "Algorithm (policy loss)", "RL steps", "Group size", "Answer judge"):
        assert label in html
    assert "Generate questions from my documents" in html


def test_every_reward_component_has_a_weight_field_the_optional_ones_saying_what_they_pay(
    client_alice, project
):
    html = page(client_alice.get(f"/projects/{project.pk}/runs/new/"))

    for component in COMPONENTS:
        assert f'name="weight_{component}"' in html
    assert "made only of the question's own words" in html  # novelty's help
    assert "confidence that matches being right" in html  # calibration's


def test_starting_a_run_records_the_preset_with_the_chosen_options(
    client_alice, project, question_set
):
    response = client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {
            "name": "Capex hunt",
            "question_set": question_set.pk,
            "preset": "quick-cpu",
            "loss": "tis",
            "steps": "3",
            "group_size": "3",
            "weight_correctness": "0.8",
            "weight_novelty": "0.1",
        },
    )

    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.name, run.question_set, run.total_steps) == ("Capex hunt", question_set, 3)
    assert run.config["loss"]["kind"] == "tis" and run.config["group_size"] == 3
    assert run.config["reward"]["weights"]["correctness"] == 0.8
    assert run.config["reward"]["weights"]["golden_recall"] == 0.2  # untouched: the default
    assert run.config["reward"]["weights"]["novelty"] == 0.1  # an optional component, on
    assert run.config["limits"]["max_turns"] == 2  # the rest comes from the preset


def test_the_new_run_page_offers_the_filings_pack_when_the_documents_look_like_filings(
    client_alice, project
):
    plain = page(client_alice.get(f"/projects/{project.pk}/runs/new/"))
    assert "Domain pack" in plain and "Suggested:" not in plain

    project.documents.update(status=Document.Status.PARSED, looks_like="filings")
    html = page(client_alice.get(f"/projects/{project.pk}/runs/new/"))

    assert "Suggested: most of your documents look like financial filings" in html
    assert '<option value="filings" selected>' in html


def test_a_run_started_with_a_pack_keeps_it_and_its_page_says_so(
    client_alice, project, question_set
):
    client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {
            "name": "Filings",
            "question_set": question_set.pk,
            "preset": "quick-cpu",
            "pack": "filings",
        },
    )
    client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {"name": "Plain", "question_set": question_set.pk, "preset": "quick-cpu"},
    )

    filings, plain = Run.objects.get(name="Filings"), Run.objects.get(name="Plain")
    assert filings.config["pack"] == "filings" and filings.config["limits"]["yes_no_answers"]
    assert plain.config["pack"] == "" and not plain.config["limits"]["yes_no_answers"]
    assert "pack <strong>filings</strong>" in page(client_alice.get(f"/runs/{filings.pk}/"))
    assert "no domain pack" in page(client_alice.get(f"/runs/{plain.pk}/"))


def test_a_run_that_cannot_start_says_why_and_creates_nothing(client_alice, project):
    project.documents.update(status=Document.Status.UPLOADED)

    response = client_alice.post(
        f"/projects/{project.pk}/runs/new/", {"name": "Too early", "preset": "quick-cpu"}
    )

    assert response.status_code == 400
    assert "still being read" in page(response)
    assert not Run.objects.exists()


def test_a_judge_is_picked_from_a_list_not_typed(client_alice, project):
    # Operator judges by name, or the project's own endpoint: see test_judge_platform.py.
    response = client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {"name": "x", "preset": "quick-cpu", "judge": "http://judge.example/v1"},
    )

    assert response.status_code == 400
    assert "Select a valid choice." in page(response)
    assert not Run.objects.exists()


# --- reward preview ------------------------------------------------------------------------


@pytest.fixture
def preview(preview_here):
    """preview(client, project, **form): the preview's result page, scored as the preview
    task scores it on a worker (tests/platform/conftest.py)."""
    return lambda client, project, **data: preview_here(client, project, data)


def test_the_reward_preview_scores_each_sample_answer_component_by_component(
    client_alice, preview, project
):
    html = preview(
        client_alice,
        project,
        preset="quick-cpu",
        question_text="What was 3M's FY2018 capital expenditure?",
        ground_truth="$1577.00",
        sample_answers="$1,577 million\nThe answer cannot be determined from the filings.",
        searched="on",
        found_golden="on",
    )

    rows = html.split("<tbody>")[1].split("</tr>")
    assert "$1,577 million" in rows[0] and "<strong>1.00</strong>" in rows[0]
    assert "cannot be determined" in rows[1] and "<strong>1.00</strong>" not in rows[1]
    for component in ("Correctness", "Conciseness", "Golden recall", "Format"):
        assert component in html
    assert "offline judge" in html


def test_the_reward_preview_uses_the_weights_from_the_form(client_alice, preview, project):
    html = preview(
        client_alice,
        project,
        preset="quick-cpu",
        question_text="Did AMCOR pay a dividend?",
        ground_truth="Yes",
        sample_answers="Yes",
        searched="on",  # found_golden left unticked: golden recall is 0
        weight_correctness="0",
        weight_conciseness="0",
        weight_format="0",
        weight_golden_recall="1",
    )

    assert "<strong>0.00</strong>" in html


def test_the_reward_preview_shows_an_optional_component_once_it_is_weighted(
    client_alice, preview, project
):
    html = preview(
        client_alice,
        project,
        preset="quick-cpu",
        question_text="What exception does a failing assert statement raise?",
        ground_truth="AssertionError",
        sample_answers="Failing assertion\nValueError",
        searched="on",
        weight_novelty="1",
    )

    head, body = html.split("<tbody>")
    labels = re.findall(r"<th>(.*?)</th>", head, re.S)
    novelty = next(i for i, label in enumerate(labels) if label.startswith("Novelty"))
    rows = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in body.split("</tr>")[:2]]
    assert rows[0][novelty].strip() == "0.00"  # the question's words, wrong
    assert rows[1][novelty].strip() == "1.00"  # wrong, but not a restatement


def test_the_reward_preview_can_take_a_question_from_the_question_set(
    client_alice, preview, project, question_set
):
    question = question_set.questions.get(position=3)

    html = preview(
        client_alice,
        project,
        preset="quick-cpu",
        sample_question=question.pk,
        sample_answers="34.6%",
        searched="on",
        found_golden="on",
    )

    assert "<strong>1.00</strong>" in html


def test_the_reward_preview_explains_what_is_missing(client_alice, preview, project):
    html = preview(client_alice, project, preset="quick-cpu", question_text="Q?")

    assert "Give the correct answer to compare with." in html
    assert "Write at least one sample answer." in html


# --- the run page --------------------------------------------------------------------------


def test_the_run_page_shows_status_events_checkpoints_and_the_validation_table(client_alice, run):
    html = page(client_alice.get(f"/runs/{run.pk}/"))

    assert "Training" in html and "step 2 of 4" in html and "Training started." in html
    assert "One-shot BM25 (the question as the query)" in html and "Trained agent" in html
    assert "45.0%" in html and "10.0%" in html  # answer score: agent vs one-shot BM25
    assert f"/checkpoints/{run.checkpoints.get().pk}/download/" in html
    assert '75.0% <span class="muted small">pass@4</span>' in html
    assert "after a miss" in html and "<td>3.4</td>" in html  # searches when the first missed
    assert "Cancel run" in html


def test_a_finished_runs_page_says_how_far_the_agent_beat_one_shot_search(client_alice, run):
    """A run's own evaluation (`evaluate_run`) names echo@K, the one-shot search given the
    agent's chunk count: the page puts the two side by side in a sentence."""
    metrics = {"searches_after_miss": 2.0, "retrieved_chunks": 4.8}
    run.eval_report = {
        "policies": {
            "trained": metrics | {"golden_recall": 0.573, "accuracy": 0.04, "answer_score": 0.3},
            "base": metrics | {"golden_recall": 0.0, "accuracy": 0.0, "answer_score": 0.1},
            "echo@5": metrics | {"golden_recall": 0.28, "accuracy": 0.004, "answer_score": 0.2},
        },
        "echo_k": 5,
        "questions": 25,
    }
    run.status = Run.Status.SUCCEEDED
    run.save()

    html = page(client_alice.get(f"/runs/{run.pk}/"))

    assert "Given the same 5 chunks as one-shot BM25" in html
    assert "<strong>2.05×</strong> the golden evidence it found (57.3% against 28.0%)" in html
    assert (
        "answered 4.0% of the questions correctly against 0.4% (the untrained model: 0.0%)" in html
    )


def test_a_finished_runs_page_says_what_rl_added_to_its_own_cold_start(client_alice, run):
    metrics = {"searches_after_miss": 2.0, "retrieved_chunks": 4.8}
    share = {
        "recall": {"mean": 0.0, "low": -0.05, "high": 0.05, "n": 40},
        "accuracy": {"mean": 0.075, "low": 0.025, "high": 0.125, "n": 40},
    }
    run.eval_report = {
        "policies": {
            "trained": metrics | {"golden_recall": 0.6, "accuracy": 0.3},
            "base": metrics | {"golden_recall": 0.0, "accuracy": 0.0},
            "echo@5": metrics | {"golden_recall": 0.5, "accuracy": 0.05},
            "cold-start": metrics | {"golden_recall": 0.6, "accuracy": 0.225},
        },
        "echo_k": 5,
        "rl_share": share,
    }
    run.status = Run.Status.SUCCEEDED
    run.save()

    html = page(client_alice.get(f"/runs/{run.pk}/"))

    assert "The same run before RL (its cold start alone)" in html
    assert "cold start alone found 60.0% of the golden evidence and answered 22.5%" in html
    assert "+0.0 points of recall [-5.0 points, +5.0 points]" in html
    assert "+7.5 points of accuracy [+2.5 points, +12.5 points]" in html
    assert "not told from chance" not in html  # accuracy's interval excludes 0
    share["accuracy"] |= {"low": -0.025}
    run.save()
    assert "not told from chance" in page(client_alice.get(f"/runs/{run.pk}/"))


def test_a_report_without_echo_at_the_agents_chunks_gets_no_comparison_sentence(client_alice, run):
    html = page(client_alice.get(f"/runs/{run.pk}/"))  # EVAL_REPORT: `sleuth eval`, no echo@K
    assert "Trained agent" in html and 'id="verdict"' not in html


def test_the_live_part_polls_while_the_run_is_active_and_stops_when_it_ends(client_alice, run):
    polling = page(client_alice.get(f"/runs/{run.pk}/live/"))
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)
    finished = page(client_alice.get(f"/runs/{run.pk}/live/"))

    assert 'hx-trigger="every 2s"' in polling
    assert "hx-trigger" not in finished and "Cancel run" not in finished


def test_metrics_come_as_series_aligned_on_steps(client_alice, run):
    data = client_alice.get(f"/runs/{run.pk}/metrics.json").json()

    assert data["steps"] == [1, 2] and data["active"] is True
    assert data["series"]["reward/total"] == [0.2, 0.4]
    assert data["series"]["val/pass@4"] == [None, 0.75]  # evaluated at step 2 only


def test_the_trajectory_viewer_marks_golden_chunks_and_breaks_down_the_reward(client_alice, run):
    html = page(client_alice.get(f"/runs/{run.pk}/samples/"))

    assert "What was 3M&#x27;s FY2018 capital expenditure?" in html
    assert "3M 2018 purchases of property plant" in html
    assert 'class="chunk golden"' in html and "3M-p60-c0 ★ golden" in html
    assert "3M-p59-c1 ★" not in html
    assert "malformed" in html and "$1,577 million" in html
    assert "golden_recall 1.00" in html and "format 0.75" in html


def test_the_viewer_follows_new_samples_only_while_showing_the_latest_step(client_alice, run):
    TrajectorySample.objects.create(run=run, step=1, question_id="q0", data=SAMPLE)

    latest = page(client_alice.get(f"/runs/{run.pk}/samples/"))
    older = page(client_alice.get(f"/runs/{run.pk}/samples/?step=1"))

    assert 'hx-trigger="every 10s"' in latest and 'hx-trigger="every 10s"' not in older
    assert '<option value="1" selected>' in older


def test_cancelling_asks_the_run_to_stop(client_alice, run):
    response = client_alice.post(f"/runs/{run.pk}/cancel/")

    run.refresh_from_db()
    assert response.status_code == 302 and run.cancel_requested
    assert run.events.filter(message="Cancel requested.").exists()


def test_a_checkpoint_downloads_through_a_short_lived_presigned_url(client_alice, run):
    checkpoint = run.checkpoints.get()

    response = client_alice.get(f"/checkpoints/{checkpoint.pk}/download/")

    url = response["Location"]
    assert response.status_code == 302 and "X-Amz-Expires=" in url
    with urllib.request.urlopen(url) as download:
        assert download.read() == b"weights"
        assert "step-2.tar.gz" in download.headers["Content-Disposition"]


def test_a_checkpoint_without_an_archive_says_why_it_has_no_download(client_alice, project):
    run = make_run(project, archive=False)
    checkpoint = run.checkpoints.get()
    url = f"/checkpoints/{checkpoint.pk}/download/"

    intermediate = page(client_alice.get(url, follow=True))
    Checkpoint.objects.filter(pk=checkpoint.pk).update(is_final=True)
    final = page(client_alice.get(url, follow=True))

    assert "Only a run&#x27;s final checkpoint is packed for download." in intermediate
    assert "still being packed" in final


def test_the_project_page_lists_its_runs(client_alice, run):
    html = page(client_alice.get(f"/projects/{run.project_id}/"))

    assert f"/runs/{run.pk}/" in html and "First try" in html
    assert f"/projects/{run.project_id}/runs/new/" in html


# --- landing page --------------------------------------------------------------------------


def test_the_landing_page_never_shows_a_staff_members_run(client, charlie):
    make_run(project_create(owner=charlie, name="Demo"), status=Run.Status.SUCCEEDED)

    html = page(client.get("/"))

    assert "Measured, not promised" not in html and "45.0%" not in html


def test_the_landing_page_never_shows_a_customers_numbers(client, run):
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED)

    html = page(client.get("/"))

    assert "Measured, not promised" not in html and "45.0%" not in html


def test_the_landing_page_shows_a_configured_published_evaluation(client, tmp_path):
    path = tmp_path / "eval.json"
    path.write_text(json.dumps(EVAL_REPORT))

    with override_settings(SLEUTH_PUBLISHED_EVAL=str(path)):
        html = page(client.get("/"))

    assert "published evaluation" in html and "45.0%" in html


# --- isolation -----------------------------------------------------------------------------


def run_requests(run):
    p, r, c = run.project_id, run.pk, run.checkpoints.get().pk
    preview = {"question_text": "Q?", "ground_truth": "A", "sample_answers": "A"}
    return [
        ("get", f"/projects/{p}/runs/new/", None),
        ("post", f"/projects/{p}/runs/new/", {"name": "Sneaky", "preset": "quick-cpu"}),
        ("post", f"/projects/{p}/runs/reward-preview/", preview),
        ("get", f"/runs/{r}/", None),
        ("get", f"/runs/{r}/live/", None),
        ("get", f"/runs/{r}/metrics.json", None),
        ("get", f"/runs/{r}/samples/", None),
        ("get", f"/checkpoints/{c}/download/", None),
        ("post", f"/runs/{r}/cancel/", {}),
    ]


@pytest.mark.parametrize("intruder", ["bob", "charlie"])
def test_another_customer_and_staff_get_404_on_every_run_url(client, run, intruder, request):
    client.force_login(request.getfixturevalue(intruder))

    statuses = {url: getattr(client, m)(url, d).status_code for m, url, d in run_requests(run)}

    assert set(statuses.values()) == {404}, statuses
    run.refresh_from_db()
    assert not run.cancel_requested and Run.objects.count() == 1


def test_the_owner_reaches_every_run_url(client_alice, run):
    statuses = {
        url: getattr(client_alice, m)(url, d).status_code for m, url, d in run_requests(run)
    }

    assert set(statuses.values()) <= {200, 302}, statuses
    run.refresh_from_db()
    assert run.cancel_requested and Run.objects.count() == 2


def test_nobody_signed_in_is_sent_to_log_in_from_every_run_url(client, run):
    for method, url, data in run_requests(run):
        response = getattr(client, method)(url, data)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url


def test_another_customers_question_set_cannot_be_named_in_a_run_or_a_preview(
    client, bob, project, question_set
):
    bobs = project_create(owner=bob, name="Bob's")
    Document.objects.create(
        project=bobs,
        name="b.txt",
        kind="text",
        content_type="text/plain",
        size=1,
        sha256="1" * 64,
        s3_key="projects/b/b.txt",
        status=Document.Status.PARSED,
    )
    client.force_login(bob)
    question = question_set.questions.first()

    run = client.post(
        f"/projects/{bobs.pk}/runs/new/",
        {"name": "x", "preset": "quick-cpu", "question_set": question_set.pk},
    )
    preview = client.post(
        f"/projects/{bobs.pk}/runs/reward-preview/",
        {"sample_question": question.pk, "sample_answers": "A"},
    )

    assert run.status_code == 400 and not Run.objects.exists()
    assert "Select a valid choice" in page(preview)
