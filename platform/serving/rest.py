"""Sleuth's own REST API at /v1, beside OpenAI's (serving.api): what OpenAI has no word for.
Mounted on the same NinjaAPI, so the same personal API token, OpenAI-shaped errors and
OpenAPI schema (/v1/openapi.json).

- `GET /v1/projects`, `POST /v1/projects` (`{"name"}`), `GET /v1/projects/{id}`,
  `DELETE /v1/projects/{id}` (with everything in it, as the website's delete; 409 while one
  of its runs is active).
- `GET /v1/projects/{id}/documents[/{document_id}]`: documents with their status, pages and
  the entity the platform read (or the owner set).
- `GET /v1/projects/{id}/question_sets[/{question_set_id}]`: question sets with their counts
  and source (uploaded, generated, playground).
- `GET /v1/runs/{run_id}/metrics?since=<step>`: the run's metric rows, one per step.
- `GET /v1/runs/{run_id}/checkpoints/{checkpoint_id}/download`: a short-lived presigned URL
  of the checkpoint's archive (runs.selectors.checkpoint_download_url, as the website's
  download).

Ids are the numbers the website shows; where /v1's OpenAI endpoints name the same thing, that
name works too (a run's `ftjob-…`, a checkpoint's `ftckpt-…`, a document's `file-doc-…`, a
question set's `file-…`), and each object gives it as `file_id` or `fine_tuning_job_id`.
Every list pages like OpenAI's: newest first (metrics in step order), `after` the last id of
the previous page, `limit` at most 100 (metrics 1000), `has_more`. Everything is scoped to
the token's owner: another customer's id is a 404, as one that does not exist. Views stay
thin: lookups through the apps' selectors, writes through their services.
"""

from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone
from ninja import Router, Schema

from core.ratelimit import account_limit_message, account_throttled, retry_words
from corpora.forms import ProjectForm
from corpora.models import Document, Project, QuestionSet
from corpora.selectors import (
    documents_for_project,
    project_get_for_user,
    projects_for_user,
    question_set_source,
    question_sets_for_project,
)
from corpora.services import DeletionRefused, project_create, project_delete
from runs.models import Checkpoint, Run, RunMetric
from runs.selectors import (
    checkpoint_download_url,
    checkpoint_get_for_user,
    run_get_for_user,
    run_metric_rows,
)

from .jobs import JobsError, is_id, list_page, page_limit

router = Router(tags=["Sleuth"])

DEFAULT_LIMIT = 20
METRICS_DEFAULT_LIMIT = 100
METRICS_MAX_LIMIT = 1000


def _not_found(what: str, ident) -> JobsError:
    return JobsError(404, f"No such {what}: {str(ident)!r}.", f"{what.replace(' ', '_')}_not_found")


def _timestamp(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment else None


def _pk(ident: str, what: str, *prefixes: str) -> int:
    """The number an id names: the number itself, or behind one of its other names."""
    for prefix in prefixes:
        if ident.startswith(prefix):
            ident = ident.removeprefix(prefix)
            break
    if not is_id(ident):
        raise _not_found(what, ident)
    return int(ident)


def _found(lookup, what: str, ident: str, *prefixes: str):
    """`lookup(pk)` through an owner-scoped selector; its 404 in OpenAI's shape."""
    try:
        return lookup(_pk(ident, what, *prefixes))
    except Http404:
        raise _not_found(what, ident) from None


def _newest_first(rows: QuerySet, after: str | None, limit: int, what: str, *prefixes: str):
    """One page of `rows` newest first, after the row `after` names (itself one of `rows`)."""
    if after:
        cursor = rows.filter(pk=_pk(after, what, *prefixes)).first()
        if cursor is None:
            raise _not_found(what, after)
        rows = rows.filter(
            Q(created_at__lt=cursor.created_at) | Q(created_at=cursor.created_at, pk__lt=cursor.pk)
        )
    return list(rows.order_by("-created_at", "-pk")[: limit + 1])


# Projects


def _project(project: Project) -> dict:
    return {
        "id": str(project.pk),
        "object": "project",
        "name": project.name,
        "created_at": _timestamp(project.created_at),
        "document_count": project.document_count,
        "question_set_count": project.question_set_count,
        "searchable": bool(project.index_prefix),  # an index of its documents is built
    }


def _project_for(user, project_id: str) -> Project:
    return _found(lambda pk: project_get_for_user(user=user, project_id=pk), "project", project_id)


def _annotated(user, project: Project) -> Project:
    return projects_for_user(user=user).get(pk=project.pk)


@router.get("/projects")
def projects_list(request, after: str | None = None, limit: int | None = None):
    """Your projects, newest first."""
    limit = page_limit(limit, DEFAULT_LIMIT)
    rows = _newest_first(projects_for_user(user=request.user), after, limit, "project")
    return list_page(rows, limit, _project)


class ProjectCreate(Schema):
    name: str


@router.post("/projects")
def projects_create(request, body: ProjectCreate):
    """A new, empty project (the website's form checks the name)."""
    form = ProjectForm(data={"name": body.name})
    if not form.is_valid():
        raise JobsError(400, f"name: {' '.join(form.errors['name'])}", "invalid_name", "name")
    # One count with the website's form (core.ratelimit.account_throttled).
    window = account_throttled("project", request.user)
    if window is not None:
        from .api import _throttled  # serving.api imports this module

        raise _throttled(
            window,
            f"{account_limit_message('project')} No project was created. {retry_words(window)}",
        )
    project = project_create(owner=request.user, name=form.cleaned_data["name"])
    return _project(_annotated(request.user, project))


@router.get("/projects/{project_id}")
def projects_retrieve(request, project_id: str):
    return _project(_annotated(request.user, _project_for(request.user, project_id)))


@router.delete("/projects/{project_id}")
def projects_delete(request, project_id: str):
    """Delete the project with its documents, question sets, indexes, runs and models."""
    project = _project_for(request.user, project_id)
    deleted = str(project.pk)
    try:
        project_delete(project=project)
    except DeletionRefused as error:
        raise JobsError(409, str(error), "project_busy") from None
    return {"id": deleted, "object": "project.deleted", "deleted": True}


# Documents


def _document(document: Document) -> dict:
    failed = document.status == Document.Status.FAILED
    return {
        "id": str(document.pk),
        "object": "document",
        "project": str(document.project_id),
        "file_id": f"file-doc-{document.pk}",
        "filename": document.name,
        "kind": document.kind,
        "bytes": document.size,
        "created_at": _timestamp(document.created_at),
        # uploaded (waiting to be read), parsed, indexed (searchable), failed
        "status": document.status,
        "error": (document.error or None) if failed else None,
        "pages": document.pages,
        "entity": document.entity or None,  # the company the platform read, or its owner set
    }


@router.get("/projects/{project_id}/documents")
def documents_list(request, project_id: str, after: str | None = None, limit: int | None = None):
    """The project's documents, newest first."""
    project = _project_for(request.user, project_id)
    limit = page_limit(limit, DEFAULT_LIMIT)
    rows = _newest_first(
        documents_for_project(project=project), after, limit, "document", "file-doc-"
    )
    return list_page(rows, limit, _document)


@router.get("/projects/{project_id}/documents/{document_id}")
def documents_retrieve(request, project_id: str, document_id: str):
    project = _project_for(request.user, project_id)
    pk = _pk(document_id, "document", "file-doc-")
    document = documents_for_project(project=project).filter(pk=pk).first()
    if document is None:
        raise _not_found("document", document_id)
    return _document(document)


# Question sets


def _question_set(question_set: QuestionSet) -> dict:
    recall = question_set.echo_recall or {}
    return {
        "id": str(question_set.pk),
        "object": "question_set",
        "project": str(question_set.project_id),
        "file_id": f"file-{question_set.pk}",
        "name": question_set.name,
        "bytes": question_set.size,
        "created_at": _timestamp(question_set.created_at),
        "source": question_set_source(question_set),
        "needs_review": question_set.needs_review,  # a generated draft no run may use yet
        "question_count": question_set.question_count,
        "with_evidence_count": question_set.evidence_count,
        "entity_count": question_set.entity_count,
        # Golden-page recall of one-shot BM25 with the question as the query, once measured.
        "echo_recall": (
            {"k": recall.get("k"), "recall": recall.get("recall")} if "k" in recall else None
        ),
    }


@router.get("/projects/{project_id}/question_sets")
def question_sets_list(
    request, project_id: str, after: str | None = None, limit: int | None = None
):
    """The project's question sets, newest first."""
    project = _project_for(request.user, project_id)
    limit = page_limit(limit, DEFAULT_LIMIT)
    rows = _newest_first(
        question_sets_for_project(project=project), after, limit, "question set", "file-"
    )
    return list_page(rows, limit, _question_set)


@router.get("/projects/{project_id}/question_sets/{question_set_id}")
def question_sets_retrieve(request, project_id: str, question_set_id: str):
    project = _project_for(request.user, project_id)
    pk = _pk(question_set_id, "question set", "file-")
    question_set = question_sets_for_project(project=project).filter(pk=pk).first()
    if question_set is None:
        raise _not_found("question set", question_set_id)
    return _question_set(question_set)


# Runs


def _run_for(user, run_id: str) -> Run:
    return _found(lambda pk: run_get_for_user(user=user, run_id=pk), "run", run_id, "ftjob-")


def _metric(row: RunMetric) -> dict:
    return {
        "id": f"step-{row.step}",
        "object": "run.metric",
        "step": row.step,
        "created_at": _timestamp(row.created_at),
        "metrics": {key: value for key, value in row.data.items() if key != "step"},
    }


@router.get("/runs/{run_id}/metrics")
def runs_metrics(
    request,
    run_id: str,
    since: int | None = None,
    after: str | None = None,
    limit: int | None = None,
):
    """The run's metric rows, one per training step in step order, as the trainer logged
    them: only the steps after `since` (a step number) or `after` (a row's id, `step-N`).
    `active` says whether the run may log more: poll with the last step until it is false."""
    run = _run_for(request.user, run_id)
    active = run.is_active  # read first: a run seen ended has written all its metrics
    limit = page_limit(limit, METRICS_DEFAULT_LIMIT, most=METRICS_MAX_LIMIT)
    if since is not None and since < 0:
        raise JobsError(400, "since must be a step number, e.g. since=120.", param="since")
    start = since
    if after:
        step = _pk(after, "metric", "step-")
        start = step if start is None else max(start, step)
    rows = list(run_metric_rows(run=run, since=start)[: limit + 1])
    return list_page(rows, limit, _metric) | {"active": active}


@router.get("/runs/{run_id}/checkpoints/{checkpoint_id}/download")
def runs_checkpoint_download(request, run_id: str, checkpoint_id: str):
    """A short-lived presigned URL of the checkpoint's archive (only a run's final
    checkpoint is packed)."""
    run = _run_for(request.user, run_id)
    checkpoint: Checkpoint = _found(
        lambda pk: checkpoint_get_for_user(user=request.user, checkpoint_id=pk),
        "checkpoint",
        checkpoint_id,
        "ftckpt-",
    )
    if checkpoint.run_id != run.pk:
        raise _not_found("checkpoint", checkpoint_id)
    if not checkpoint.archive_key:
        if checkpoint.is_final and checkpoint.run.is_active:
            raise JobsError(
                409, "This checkpoint is still being packed; try again shortly.", "not_ready"
            )
        raise JobsError(
            404, "Only a run's final checkpoint is packed for download.", "archive_not_found"
        )
    url = checkpoint_download_url(checkpoint=checkpoint)
    if url is None:  # a key outside the run's own folder: never presigned
        raise JobsError(404, "No such checkpoint archive.", "archive_not_found")
    expires_in = settings.S3_PRESIGNED_TTL_SECONDS
    return {
        "id": str(checkpoint.pk),
        "object": "checkpoint.download",
        "fine_tuning_checkpoint_id": f"ftckpt-{checkpoint.pk}",
        "fine_tuning_job_id": f"ftjob-{run.pk}",
        "step_number": checkpoint.step,
        "is_final": checkpoint.is_final,
        "filename": checkpoint.archive_key.rsplit("/", 1)[-1],
        "bytes": checkpoint.size_bytes,
        "url": url,
        "expires_at": _timestamp(timezone.now() + timedelta(seconds=expires_in)),
    }
