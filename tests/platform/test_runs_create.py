"""Starting and cancelling runs: what a customer is told when a run cannot start."""

from datetime import timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from runs.models import Run
from runs.presets import PRESETS, preset_config
from runs.services import RunRejected, account_usage, run_cancel, run_create


def _document(project, status="parsed", n=1):
    return Document.objects.create(
        project=project,
        name=f"doc-{n}.txt",
        kind="text",
        content_type="text/plain",
        size=10,
        sha256=f"{n:064d}",
        s3_key=f"projects/{project.pk}/documents/{n}/doc.txt",
        status=status,
    )


def _question_set(project, answers=("seven", "nine")):
    question_set = QuestionSet.objects.create(
        project=project, name="qs.jsonl", s3_key=f"qs/{project.pk}/{len(answers)}", size=1
    )
    for position, answer in enumerate(answers, start=1):
        Question.objects.create(
            question_set=question_set, position=position, question=f"q{position}?", answer=answer
        )
    return question_set


def test_every_preset_builds_a_train_config_and_options_override_it():
    for name in PRESETS:
        assert preset_config(name).steps >= 1
    config = preset_config("quick-cpu", {"steps": 3, "limits": {"max_turns": 1}})
    assert (config.steps, config.limits.max_turns) == (3, 1)
    assert (
        config.limits.results_per_search
        == PRESETS["quick-cpu"]["config"]["limits"]["results_per_search"]
    )


def test_an_unknown_option_is_refused_with_its_name():
    with pytest.raises(ValueError, match="bogus"):
        preset_config("quick-cpu", {"bogus": 1})


@pytest.mark.django_db
def test_a_run_is_queued_with_its_preset_and_an_event(alice, django_capture_on_commit_callbacks):
    project = project_create(owner=alice, name="Filings")
    _document(project)
    with django_capture_on_commit_callbacks() as callbacks:
        run = run_create(
            project=project,
            user=alice,
            name="first",
            question_set=_question_set(project),
            preset="quick-cpu",
            options={"steps": 2},
        )
    assert run.status == Run.Status.QUEUED
    assert run.config["steps"] == run.total_steps == 2
    assert [e.status for e in run.events.all()] == ["queued"]
    assert len(callbacks) == 1  # the preparation task, sent once the row is committed


@pytest.mark.django_db
def test_a_run_needs_a_parsed_document(alice):
    project = project_create(owner=alice, name="Empty")
    _document(project, status="uploaded")
    with pytest.raises(RunRejected, match="still being read"):
        run_create(project=project, user=alice, name="r", question_set=None, preset="quick-cpu")
    assert not Run.objects.exists()


@pytest.mark.django_db
def test_a_run_needs_questions_with_answers(alice):
    project = project_create(owner=alice, name="Filings")
    _document(project)
    question_set = _question_set(project, answers=("seven", ""))
    with pytest.raises(RunRejected, match="at least two"):
        run_create(
            project=project, user=alice, name="r", question_set=question_set, preset="quick-cpu"
        )


@pytest.mark.django_db
def test_nobody_starts_a_run_on_someone_elses_project(alice, bob):
    project = project_create(owner=alice, name="Filings")
    _document(project)
    with pytest.raises(RunRejected):
        run_create(project=project, user=bob, name="r", question_set=None, preset="quick-cpu")


@pytest.mark.django_db
def test_cancelling_a_queued_run_ends_it_at_once(alice):
    project = project_create(owner=alice, name="Filings")
    _document(project)
    run = run_create(project=project, user=alice, name="r", question_set=None, preset="quick-cpu")

    run = run_cancel(run=run, user=alice)

    assert (run.status, run.cancel_requested) == ("cancelled", True)
    assert run.finished_at is not None
    assert [e.status for e in run.events.all() if e.status] == ["queued", "cancelled"]


@pytest.mark.django_db
def test_every_preset_has_a_time_cap_and_a_run_cannot_lift_it(alice):
    assert all(preset_config(name).max_minutes for name in PRESETS)
    project = project_create(owner=alice, name="p")
    _document(project)
    qs = _question_set(project)
    for options, said in (
        ({"max_minutes": None}, "at most 360 minutes"),
        ({"max_minutes": 100_000}, "at most 360 minutes"),
        ({"steps": 10_000}, "at most 1000 steps"),
    ):
        with pytest.raises(RunRejected, match=said):
            run_create(project=project, user=alice, name="r", question_set=qs, options=options)
    assert not Run.objects.exists()


@pytest.mark.django_db
@override_settings(SLEUTH_MAX_ACTIVE_RUNS=2)
def test_an_account_may_have_only_so_many_runs_active(alice, bob):
    project = project_create(owner=alice, name="p")
    _document(project)
    qs = _question_set(project)

    def start():
        return run_create(project=project, user=alice, name="r", question_set=qs)

    first, _ = start(), start()
    with pytest.raises(RunRejected, match="2 runs queued or running"):
        start()
    run_cancel(run=first, user=alice)  # a finished run frees its slot
    start()
    # Another customer's limit is their own.
    other = project_create(owner=bob, name="b")
    _document(other, n=2)
    run_create(project=other, user=bob, name="r", question_set=_question_set(other))


@pytest.mark.django_db
@override_settings(SLEUTH_WORKER_MINUTES=100)
def test_worker_minutes_are_reserved_while_active_and_counted_as_run_after(alice, client):
    project = project_create(owner=alice, name="p")
    _document(project)
    qs = _question_set(project)

    def start():
        return run_create(
            project=project, user=alice, name="r", question_set=qs, preset="cpu-45min"
        )

    run = start()
    assert account_usage(alice).minutes_left == 55  # its whole cap reserved
    start()
    with pytest.raises(RunRejected, match="up to 45 worker-minutes; you have 10 left"):
        start()
    # Once the first ended after 12 minutes, it counts 12.
    started = timezone.now() - timedelta(minutes=12)
    Run.objects.filter(pk=run.pk).update(
        status=Run.Status.SUCCEEDED, started_at=started, finished_at=timezone.now()
    )
    assert account_usage(alice).minutes_left == 43
    client.force_login(alice)
    page = client.get(f"/projects/{project.pk}/runs/new/").content.decode()
    assert "43 of your 100 worker-minutes left" in page
    assert "may use up to 45 worker-minutes of your 43 left" in page
