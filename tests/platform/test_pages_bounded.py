"""Pages and polls stay bounded however big a project grows (issue 16.6): a question set's
page is paginated, the new-run form offers a few questions rather than every one, the run
page's metrics come incrementally (?since=) and downsampled, problem lists and events are
capped with "and N more", and the history of long-ended runs expires (runs.retention)."""

import json
import re
from datetime import timedelta

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.utils import timezone

from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from runs.models import Checkpoint, Run, RunEvent, RunMetric, TrajectorySample
from runs.retention import runs_history_expire
from tests.helpers.pages import make_run, page

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(alice):
    project = project_create(owner=alice, name="Filings")
    Document.objects.create(
        project=project,
        name="notes.txt",
        kind="text",
        content_type="text/plain",
        size=3,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/notes.txt",
        status=Document.Status.PARSED,
    )
    return project


def question_set_of(project, n: int) -> QuestionSet:
    question_set = QuestionSet.objects.create(
        project=project, name="big.jsonl", s3_key=f"projects/{project.pk}/big.jsonl", size=3
    )
    Question.objects.bulk_create(
        Question(question_set=question_set, position=i, question=f"Question {i}?", answer="A")
        for i in range(1, n + 1)
    )
    return question_set


def rows(html: str) -> list[str]:
    return re.findall(r"<td>(\d+)</td><td>Question \d+\?</td>", html)


# --- question sets ---------------------------------------------------------------------------


def test_a_question_set_page_shows_one_page_of_questions_and_links_to_the_next(
    client_alice, project
):
    question_set = question_set_of(project, 250)

    html = page(client_alice.get(f"/question-sets/{question_set.pk}/"))

    assert rows(html) == [str(i) for i in range(1, 101)]
    assert "250 questions" in html and "Page 1 of 3" in html
    assert 'href="?page=2" rel="next"' in html


def test_a_later_page_of_a_question_set_shows_the_questions_after_the_first(client_alice, project):
    question_set = question_set_of(project, 250)

    html = page(client_alice.get(f"/question-sets/{question_set.pk}/?page=3"))

    assert rows(html) == [str(i) for i in range(201, 251)]
    assert 'href="?page=2" rel="prev"' in html and "Page 3 of 3" in html


def test_the_new_run_page_offers_a_few_questions_to_preview_not_every_one(client_alice, project):
    question_set_of(project, 300)

    html = page(client_alice.get(f"/projects/{project.pk}/runs/new/"))

    menu = re.search(r'<select name="sample_question".*?</select>', html, re.S).group(0)
    assert menu.count("<option") == 51  # "type one below", then the first 50
    assert "Question 50?" in menu and "Question 51?" not in html
    assert "The first 50 of your 300 questions" in html


def test_a_question_beyond_the_menu_can_still_be_previewed(client_alice, project, preview_here):
    last = question_set_of(project, 300).questions.get(position=300)

    html = preview_here(
        client_alice,
        project,
        {"preset": "quick-cpu", "sample_question": last.pk, "sample_answers": "A"},
    )

    assert "Select a valid choice" not in html and "<strong>" in html


# --- metrics ---------------------------------------------------------------------------------


def test_metrics_since_a_step_send_only_the_steps_after_it(client_alice, project):
    run = make_run(project)
    RunMetric.objects.create(run=run, step=3, data={"step": 3, "reward/total": 0.6})

    data = client_alice.get(f"/runs/{run.pk}/metrics.json?since=2").json()

    assert data["steps"] == [3] and data["series"] == {"reward/total": [0.6]}
    assert data["active"] is True


def test_metrics_since_the_last_step_send_nothing_new(client_alice, project):
    run = make_run(project)

    data = client_alice.get(f"/runs/{run.pk}/metrics.json?since=2").json()

    assert data["steps"] == [] and data["series"] == {}


def test_metrics_since_something_else_than_a_step_is_refused_with_the_reason(client_alice, project):
    run = make_run(project)

    response = client_alice.get(f"/runs/{run.pk}/metrics.json?since=abc")

    assert response.status_code == 400 and "step number" in response.json()["error"]


def test_a_long_runs_metrics_come_downsampled_keeping_the_last_step_and_validation(
    client_alice, project
):
    run = make_run(project)
    RunMetric.objects.all().delete()
    RunMetric.objects.bulk_create(
        RunMetric(
            run=run,
            step=step,
            data={"reward/total": step / 10_000}
            | ({"val/answer_score": 0.42} if step == 5_001 else {}),
        )
        for step in range(1, 10_001)
    )

    data = client_alice.get(f"/runs/{run.pk}/metrics.json").json()

    assert 100 <= len(data["steps"]) <= 500
    assert data["steps"][-1] == 10_000 and data["series"]["reward/total"][-1] == 1.0
    assert data["steps"] == sorted(data["steps"])
    assert [v for v in data["series"]["val/answer_score"] if v is not None] == [0.42]


# --- capped lists ----------------------------------------------------------------------------


def test_a_refused_question_file_lists_its_first_problems_and_counts_the_rest(
    client_alice, project
):
    bad = "\n".join(json.dumps({"question": f"Q{i}?"}) for i in range(100)) + "\n"

    response = client_alice.post(
        f"/projects/{project.pk}/question-sets/upload/",
        {"file": SimpleUploadedFile("bad.jsonl", bad.encode())},
    )

    html = page(response)
    assert response.status_code == 400 and "these 100 problems" in html
    assert "Line 20: " in html and "Line 21: " not in html
    assert "and 80 more." in html


def test_a_documents_long_error_is_cut_short_in_the_table(client_alice, project):
    project.documents.update(status=Document.Status.FAILED, error="cannot be parsed " + "x" * 5000)

    html = page(client_alice.get(f"/projects/{project.pk}/"))

    assert "cannot be parsed " in html and "x" * 400 not in html


def test_the_live_part_shows_the_newest_events_and_counts_the_older_ones(client_alice, project):
    run = make_run(project)
    RunEvent.objects.bulk_create(RunEvent(run=run, message=f"Step {i} done.") for i in range(80))

    html = page(client_alice.get(f"/runs/{run.pk}/live/"))

    assert html.count('class="event ') == 50
    assert "Step 79 done." in html and "Step 29 done." not in html
    assert "and 31 more, older." in html  # 81 events in all, with "Training started."


# --- retention -------------------------------------------------------------------------------


def ended_run(project, *, days_ago: float) -> Run:
    run = make_run(project, status=Run.Status.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now() - timedelta(days=days_ago))
    run.refresh_from_db()
    return run


def test_a_run_that_ended_past_the_retention_loses_its_history_but_keeps_what_it_made(
    settings, project
):
    settings.SLEUTH_RUN_RETENTION_DAYS = 90
    run = ended_run(project, days_ago=91)

    assert runs_history_expire() == [run.pk]

    run.refresh_from_db()
    assert not RunMetric.objects.filter(run=run).exists()
    assert not TrajectorySample.objects.filter(run=run).exists()
    assert not RunEvent.objects.filter(run=run).exists()
    assert run.eval_report["policies"] and Checkpoint.objects.filter(run=run).count() == 1


def test_a_run_that_ended_within_the_retention_keeps_its_history(settings, project):
    settings.SLEUTH_RUN_RETENTION_DAYS = 90
    run = ended_run(project, days_ago=89)

    assert runs_history_expire() == []
    assert run.metrics.count() == 2 and run.samples.count() == 1 and run.events.count() == 1


def test_an_active_run_keeps_its_history_however_old(settings, project):
    settings.SLEUTH_RUN_RETENTION_DAYS = 1
    run = make_run(project)  # training
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(days=400))

    assert runs_history_expire() == []
    assert run.metrics.count() == 2


def test_the_management_command_expires_old_runs_with_its_own_days(project):
    old = ended_run(project, days_ago=10)

    call_command("runs_expire_history", "--days", "7")

    assert not old.metrics.exists() and Checkpoint.objects.filter(run=old).exists()


def test_the_run_page_says_when_a_runs_history_has_expired(settings, client_alice, project):
    settings.SLEUTH_RUN_RETENTION_DAYS = 90
    run = ended_run(project, days_ago=100)

    html = page(client_alice.get(f"/runs/{run.pk}/"))

    assert "more than 90 days ago: its curves, trajectories and events have been deleted" in html
