"""Starting and cancelling runs: what a customer is told when a run cannot start."""

import pytest

from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from runs.models import Run
from runs.presets import PRESETS, preset_config
from runs.services import RunRejected, run_cancel, run_create


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
