"""Generate questions from my documents, then review them: a generated set is a draft
(QuestionSet.needs_review) that no run may use until its owner accepts it; meanwhile lines
can be edited or deleted, the set's JSONL file on S3 rewritten with each change."""

import logging
from datetime import timedelta

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.queues import enqueue

from .indexing import echo_recall_enqueue
from .models import Project, Question, QuestionGeneration, QuestionSet
from .services import (
    QuestionImportRejected,
    question_file_body,
    question_file_check,
    question_file_put,
)

logger = logging.getLogger(__name__)

# A generation queued this long ago and still not finished is taken as lost (its worker
# died): the project page offers the button again.
GENERATION_STALE_AFTER = timedelta(minutes=15)
OFFLINE = "offline"


class GenerationRefused(ValueError):
    """Why questions cannot be generated now, in words for the customer."""


def question_generation_current(*, project: Project) -> QuestionGeneration | None:
    """The project's latest generation, when it is still running or its outcome is news
    (failed, with the reason): what the project page shows."""
    generation = project.question_generations.first()
    if generation is None:
        return None
    if generation.status == QuestionGeneration.Status.QUEUED:
        if timezone.now() - generation.created_at > GENERATION_STALE_AFTER:
            return None
    return generation


def question_generation_start(*, project: Project) -> QuestionGeneration:
    """Queue the offline generator on the project's index (one generation at a time)."""
    if not project.index_prefix:
        raise GenerationRefused(
            "Your documents are not indexed yet: wait until at least one is indexed."
        )
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=project.owner_id)
        current = question_generation_current(project=project)
        if current and current.status == QuestionGeneration.Status.QUEUED:
            raise GenerationRefused("Questions are already being generated for this project.")
        generation = QuestionGeneration.objects.create(project=project)
        transaction.on_commit(lambda: _enqueue(generation.pk))
    return generation


def _enqueue(generation_id: int) -> None:
    try:
        enqueue("config.tasks.question_set_draft", args=[generation_id])
    except Exception:
        logger.exception("could not queue question generation %s", generation_id)
        QuestionGeneration.objects.filter(pk=generation_id).update(
            status=QuestionGeneration.Status.FAILED,
            error="Could not start generating questions. Try again in a minute.",
            finished_at=timezone.now(),
        )


def question_generation_run(*, generation_id: int) -> QuestionGeneration | None:
    """Run the offline generator (runs.pipeline.question_set_generate) and record its set as
    a draft, and the generation as done, in the same transaction (no run sees the set before
    it is marked; no page lists the draft while it still says "Generating questions…"), or
    the reason it made none. None when the generation is gone or already finished."""
    from runs.pipeline import StageFailed, question_set_generate

    generation = QuestionGeneration.objects.filter(
        pk=generation_id, status=QuestionGeneration.Status.QUEUED
    ).first()
    if generation is None:
        return None
    try:
        with transaction.atomic():
            question_set = question_set_generate(project_id=generation.project_id)
            question_set.needs_review, question_set.generated_by = True, OFFLINE
            question_set.save(update_fields=["needs_review", "generated_by"])
            _finish(generation, question_set=question_set)
    except StageFailed as failure:
        return _finish(generation, error=str(failure))
    except Exception:
        logger.exception("question generation %s failed", generation_id)
        return _finish(generation, error="Generating questions failed. Try again in a minute.")
    if generation.project.index_prefix:
        echo_recall_enqueue(generation.project_id, question_set.pk)
    return generation


def _finish(generation, *, question_set=None, error: str = "") -> QuestionGeneration:
    generation.status = (
        QuestionGeneration.Status.FAILED if error else QuestionGeneration.Status.DONE
    )
    generation.error, generation.question_set = error, question_set
    generation.finished_at = timezone.now()
    generation.save(update_fields=["status", "error", "question_set", "finished_at"])
    return generation


def _rewrite(question_set: QuestionSet, change) -> QuestionSet:
    """Apply `change(rows)` to a draft set's rows and write its file again, under the
    owner's lock and quota, in one transaction (a failed S3 write keeps the old rows). A set
    accepted meanwhile (runs may use it) is refused, checked under the lock."""
    project = question_set.project
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=project.owner_id)
        locked = QuestionSet.objects.select_for_update().get(pk=question_set.pk)
        if not locked.needs_review:
            raise QuestionImportRejected(
                locked.name, [(0, "the set was accepted: runs may use it, it no longer changes")]
            )
        change()
        body = question_file_body(locked.questions.all())
        question_file_check(project=project, name=locked.name, body=body, old_size=locked.size)
        question_file_put(question_set=locked, body=body)
    return locked


def question_edit(*, question: Question, text: str, answer: str) -> Question:
    """Change a question's text and answer; the set's file follows."""
    text, answer = text.strip(), answer.strip()
    if not text or not answer:
        raise QuestionImportRejected(
            question.question_set.name, [(0, "a question and its answer are needed")]
        )

    def change():
        Question.objects.filter(pk=question.pk).update(question=text, answer=answer)

    _rewrite(question.question_set, change)
    question.question, question.answer = text, answer
    return question


def question_delete(*, question: Question) -> None:
    """Delete one question; the set's file follows."""
    _rewrite(question.question_set, lambda: Question.objects.filter(pk=question.pk).delete())


def question_set_accept(*, question_set: QuestionSet) -> QuestionSet:
    """The owner reviewed the draft: runs may use it from now on. Under the owner's lock, so
    an edit of the draft either lands before or is refused after."""
    with transaction.atomic():
        get_user_model().objects.select_for_update().get(pk=question_set.project.owner_id)
        QuestionSet.objects.filter(pk=question_set.pk).update(needs_review=False)
    question_set.needs_review = False
    return question_set
