"""Projects, document uploads, question sets. Thin: lookups go through the selectors'
owner-scoped helpers, writes through services."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.ratelimit import (
    account_limit_message,
    account_throttled,
    retry_words,
    too_many_requests,
)
from runs.models import Run

from .forms import EntityForm, ProjectForm, SearchForm
from .generation import question_generation_current
from .parse_slots import parses_cap
from .search import RESULTS, document_page_text, project_search_page
from .selectors import (
    account_storage_used,
    document_get_for_user,
    documents_in_progress,
    project_documents,
    project_get_for_user,
    projects_for_user,
    question_set_get_for_user,
)
from .services import (
    DeletionRefused,
    QuestionImportRejected,
    UploadRejected,
    document_delete,
    document_runs_derived,
    document_set_entity,
    document_upload,
    project_create,
    project_delete,
    question_set_delete,
    question_set_import,
)

# A question set's page shows this many questions at a time, with links to the others.
QUESTIONS_PER_PAGE = 100
# Below this many questions a generated set's page says it is too few to compare agents on:
# a 95 % interval on a share of 30 questions is about ±0.18 wide.
FEW_QUESTIONS = 30
# A refused question file or upload lists its first problems and counts the rest: a file of
# 100,000 bad lines must not become a page of 100,000 items.
PROBLEMS_SHOWN = 20


@login_required
@require_http_methods(["GET", "POST"])
def project_list(request):
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        window = account_throttled("project", request.user)
        if window is not None:
            return too_many_requests(
                request, window, f"{account_limit_message('project')} No project was created."
            )
        project = project_create(owner=request.user, name=form.cleaned_data["name"])
        return redirect("corpora:project_detail", project_id=project.pk)
    return render(
        request,
        "corpora/project_list.html",
        {
            "projects": projects_for_user(user=request.user),
            "form": form,
        },
    )


def _project_context(request, project, **extra):
    return {
        "project": project,
        "documents": project_documents(project=project),
        "polling": documents_in_progress(project=project),
        "parses_at_once": parses_cap(),
        "question_sets": project.question_sets.all(),
        "question_generation": question_generation_current(project=project),
        "storage_used": account_storage_used(user=request.user),
        "quota": settings.ACCOUNT_QUOTA_BYTES,
        "max_file_bytes": settings.DOCUMENT_MAX_BYTES,
        **extra,
    }


@login_required
@require_GET
def project_detail(request, project_id: int):
    project = project_get_for_user(user=request.user, project_id=project_id)
    return render(request, "corpora/project_detail.html", _project_context(request, project))


@login_required
@require_GET
def project_search(request, project_id: int):
    """Search the project's index with a query, as the agent's search tool would; beside
    it, the echo recall of the project's question sets."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    form = SearchForm(request.GET)
    query = form.cleaned_data["q"] if form.is_valid() else ""
    page = project_search_page(project=project, query=query)
    context = {
        "project": project,
        "form": form,
        "query": query,
        "page": page,
        "results_shown": RESULTS,
    }
    return render(
        request, "corpora/project_search.html", context, status=400 if form.errors else 200
    )


@login_required
@require_GET
def document_page(request, document_id: int, page: int):
    """One page of a document's parsed text (where a search result was found)."""
    document = document_get_for_user(user=request.user, document_id=document_id)
    text = document_page_text(document=document, number=page)
    missing = text.read and not text.sections
    return render(
        request,
        "corpora/document_page.html",
        {"document": document, "project": document.project, "text": text},
        status=404 if missing else 200,
    )


@login_required
@require_GET
def document_table(request, project_id: int):
    """What the document table's frame holds, fetched by htmx after an upload and polled
    while documents are being processed."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    return render(request, "corpora/_document_rows.html", _project_context(request, project))


@login_required
@require_POST
def document_upload_view(request, project_id: int):
    """One or more files. The page's script sends one file per request (for per-file
    progress) and reads JSON; without JavaScript the form posts all files and comes back."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    results = []
    window = None  # set once the account is over its upload limit: the files left wait
    for file in request.FILES.getlist("files"):
        if window is None:
            window = account_throttled("upload", request.user)
        if window is not None:
            error = f"{file.name} was not uploaded: {account_limit_message('upload')}"
            results.append({"name": file.name, "ok": False, "error": error, "throttled": True})
            continue
        try:
            document = document_upload(project=project, file=file)
        except UploadRejected as error:
            results.append({"name": file.name, "ok": False, "error": str(error)})
        else:
            results.append(
                {"name": file.name, "ok": True, "id": document.pk, "status": document.status}
            )
    if not results:
        results.append({"name": "", "ok": False, "error": "Choose at least one file to upload."})
    if request.headers.get("Accept") == "application/json":
        if window is not None:
            for result in results:
                if result.pop("throttled", False):
                    result["error"] += f" {retry_words(window)}"
            response = JsonResponse({"files": results}, status=429)
            response["Retry-After"] = str(window)
            return response
        status = 200 if all(r["ok"] for r in results) else 400
        return JsonResponse({"files": results}, status=status)
    refused = [result for result in results if not result["ok"]]
    for result in results:
        if result["ok"]:
            messages.success(request, f"Uploaded {result['name']}.")
    if window is not None:
        for result in refused[:PROBLEMS_SHOWN]:
            if not result.get("throttled"):
                messages.error(request, result["error"])
        waiting = [result["name"] for result in refused if result.get("throttled")]
        names = ", ".join(waiting[:PROBLEMS_SHOWN])
        if len(waiting) > PROBLEMS_SHOWN:
            names += f" and {len(waiting) - PROBLEMS_SHOWN} more"
        return too_many_requests(
            request,
            window,
            f"{account_limit_message('upload')} These files were not uploaded: {names}.",
        )
    for result in refused[:PROBLEMS_SHOWN]:
        messages.error(request, result["error"])
    if len(refused) > PROBLEMS_SHOWN:
        messages.error(request, f"and {len(refused) - PROBLEMS_SHOWN} more files were refused.")
    return redirect("corpora:project_detail", project_id=project.pk)


@login_required
@require_http_methods(["GET", "POST"])
def document_entity(request, document_id: int):
    """Show or edit a document's entity (htmx swaps the table cell)."""
    document = document_get_for_user(user=request.user, document_id=document_id)
    editing = request.method == "GET" and request.GET.get("edit") == "1"
    if request.method == "POST":
        form = EntityForm(request.POST)
        if form.is_valid():
            document_set_entity(document=document, entity=form.cleaned_data["entity"])
        else:
            editing = True
    if not request.headers.get("HX-Request"):
        return redirect("corpora:project_detail", project_id=document.project_id)
    return render(request, "corpora/_entity_cell.html", {"document": document, "editing": editing})


def _active_runs_refusal(project) -> str:
    names = list(project.runs.filter(status__in=Run.ACTIVE).values_list("name", flat=True)[:3])
    if not names:
        return ""
    return (
        f"Runs still use these documents ({', '.join(names)}). Cancel them, or wait until they "
        "end, then delete."
    )


@login_required
@require_http_methods(["GET", "POST"])
def document_delete_view(request, document_id: int):
    """GET asks for confirmation and lists what goes with the document; POST deletes."""
    document = document_get_for_user(user=request.user, document_id=document_id)
    project_id, name = document.project_id, document.name
    if request.method == "POST":
        try:
            runs = document_delete(document=document)
        except DeletionRefused as error:
            messages.error(request, str(error))
        else:
            also = f" and {len(runs)} run(s) that searched it" if runs else ""
            messages.success(request, f"Deleted {name}{also}.")
        return redirect("corpora:project_detail", project_id=project_id)
    removes = ["its uploaded file and the text read from it", "the search indexes built from it"]
    removes += [
        f"the run “{run.name}”, which searched it (its trajectories, checkpoints and "
        "downloadable model quote the document)"
        for run in document_runs_derived(document=document)
    ]
    return render(
        request,
        "confirm_delete.html",
        {
            "thing": "document",
            "name": name,
            "removes": removes,
            "refused": _active_runs_refusal(document.project),
            "cancel_url": reverse("corpora:project_detail", args=[project_id]),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_delete_view(request, project_id: int):
    """GET asks for confirmation; POST deletes the project with everything in it."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    if request.method == "POST":
        try:
            project_delete(project=project)
        except DeletionRefused as error:
            messages.error(request, str(error))
            return redirect("corpora:project_detail", project_id=project.pk)
        messages.success(request, f"Deleted the project {project.name}.")
        return redirect("corpora:project_list")
    counts = [
        (project.documents.count(), "document(s), with their text and search indexes"),
        (project.question_sets.count(), "question set(s)"),
        (project.runs.count(), "run(s), with their checkpoints and downloadable models"),
    ]
    return render(
        request,
        "confirm_delete.html",
        {
            "thing": "project",
            "name": project.name,
            "removes": [f"{n} {what}" for n, what in counts if n],
            "refused": _active_runs_refusal(project),
            "cancel_url": reverse("corpora:project_detail", args=[project.pk]),
        },
    )


@login_required
@require_POST
def question_set_upload(request, project_id: int):
    project = project_get_for_user(user=request.user, project_id=project_id)
    file = request.FILES.get("file")
    if file is None:
        messages.error(request, "Choose a .jsonl or .csv question file to upload.")
        return redirect("corpora:project_detail", project_id=project.pk)
    window = account_throttled("upload", request.user)
    if window is not None:
        return too_many_requests(
            request,
            window,
            f"{account_limit_message('upload')} {file.name} was not imported.",
        )
    try:
        question_set = question_set_import(project=project, file=file)
    except QuestionImportRejected as error:
        problems = error.problems
        context = _project_context(
            request,
            project,
            question_error=error,
            question_problems=problems[:PROBLEMS_SHOWN],
            question_problems_more=max(0, len(problems) - PROBLEMS_SHOWN),
        )
        return render(request, "corpora/project_detail.html", context, status=400)
    messages.success(
        request, f"Imported {question_set.questions.count()} questions from {question_set.name}."
    )
    return redirect("corpora:project_detail", project_id=project.pk)


@login_required
@require_GET
def question_set_detail(request, question_set_id: int):
    """One page of the set's questions (a set may hold 100,000: never all at once)."""
    question_set = question_set_get_for_user(user=request.user, question_set_id=question_set_id)
    paginator = Paginator(question_set.questions.all(), QUESTIONS_PER_PAGE)
    count = paginator.count
    return render(
        request,
        "corpora/question_set_detail.html",
        {
            "question_set": question_set,
            "project": question_set.project,
            "page": paginator.get_page(request.GET.get("page")),
            "few_questions": bool(question_set.generated_by) and 0 < count < FEW_QUESTIONS,
            "one_question": 1 / count if count else 0,
        },
    )


@login_required
@require_POST
def question_set_delete_view(request, question_set_id: int):
    question_set = question_set_get_for_user(user=request.user, question_set_id=question_set_id)
    project_id, name = question_set.project_id, question_set.name
    question_set_delete(question_set=question_set)
    messages.success(request, f"Deleted {name}.")
    return redirect("corpora:project_detail", project_id=project_id)
