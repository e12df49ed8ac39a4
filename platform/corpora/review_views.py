"""Generate questions from my documents, and review the draft set (edit, delete, accept).
Thin: lookups through the selectors' owner-scoped helpers, writes through corpora.generation."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from .generation import (
    GenerationRefused,
    question_delete,
    question_edit,
    question_generation_start,
    question_set_accept,
)
from .selectors import project_get_for_user, question_get_for_user, question_set_get_for_user
from .services import QuestionImportRejected
from .views import QUESTIONS_PER_PAGE


def _back_to(question) -> str:
    page = question.question_set.questions.filter(position__lt=question.position).count()
    url = redirect("corpora:question_set_detail", question.question_set_id).url
    return f"{url}?page={page // QUESTIONS_PER_PAGE + 1}"


def _refused(request, error: QuestionImportRejected) -> None:
    messages.error(request, "; ".join(problem for _, problem in error.problems))


@login_required
@require_POST
def question_generate(request, project_id: int):
    project = project_get_for_user(user=request.user, project_id=project_id)
    try:
        question_generation_start(project=project)
    except GenerationRefused as refusal:
        messages.error(request, str(refusal))
    return redirect("corpora:project_detail", project_id=project.pk)


@login_required
@require_POST
def question_edit_view(request, question_id: int):
    question = question_get_for_user(user=request.user, question_id=question_id)
    if not question.question_set.needs_review:
        messages.error(request, "Only a draft set's questions can be edited.")
    else:
        try:
            question_edit(
                question=question,
                text=request.POST.get("question", ""),
                answer=request.POST.get("answer", ""),
            )
            messages.success(request, f"Saved question {question.position}.")
        except QuestionImportRejected as error:
            _refused(request, error)
    return redirect(_back_to(question))


@login_required
@require_POST
def question_delete_view(request, question_id: int):
    question = question_get_for_user(user=request.user, question_id=question_id)
    back = _back_to(question)
    if not question.question_set.needs_review:
        messages.error(request, "Only a draft set's questions can be deleted one by one.")
        return redirect(back)
    try:
        question_delete(question=question)
        messages.success(request, f"Deleted question {question.position}.")
    except QuestionImportRejected as error:
        _refused(request, error)
    return redirect(back)


@login_required
@require_POST
def question_set_accept_view(request, question_set_id: int):
    question_set = question_set_get_for_user(user=request.user, question_set_id=question_set_id)
    question_set_accept(question_set=question_set)
    messages.success(request, f"Accepted {question_set.name}: runs can use it now.")
    return redirect("corpora:question_set_detail", question_set.pk)
