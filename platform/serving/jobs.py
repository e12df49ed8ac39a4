"""OpenAI's files and fine-tuning jobs API on Sleuth's own services, for /v1 (serving.api).

- A file with purpose "fine-tune" is a question set (JSONL/CSV of question, answer and
  optionally evidence and entity), imported by corpora.services.question_set_import with
  its validation and limits; its id is `file-<question set id>`. A file with purpose
  "assistants" or "user_data" is a document (corpora.services.document_upload): its id is
  `file-doc-<document id>`.
- A fine-tuning job is a run (runs.services.run_create, so every limit and quota applies):
  `ftjob-<run id>`. `model` names a preset ("default" is the default preset); the job's
  project is its training file's. `hyperparameters` take the new-run form's options
  (steps, group_size, loss, weight_<component>, judge), checked by that form; OpenAI's
  n_epochs, batch_size and learning_rate_multiplier only as "auto". `suffix` names the run.
- Once the run succeeded, `fine_tuned_model` is its published agent's name at /v1.

OpenAI has no projects: a new file goes to the project named by the `OpenAI-Project` header
(what `OpenAI(project=...)` sends), a `project` query parameter or form field, else the
caller's most recent project. Lists take the same, and otherwise span every project.

Everything is scoped to the caller: another customer's id is a 404, like one that does not
exist. Problems raise JobsError with OpenAI's status, message, code and param.
"""

from datetime import datetime

from django.core.files.uploadedfile import UploadedFile
from django.db.models import Q, QuerySet
from django.http import Http404

from corpora.models import Document, Project, QuestionSet
from corpora.selectors import projects_for_user
from corpora.services import (
    QuestionImportRejected,
    UploadRejected,
    document_upload,
    question_set_import,
)
from engine.rewards.reward import COMPONENTS
from runs.forms import RunForm
from runs.models import Checkpoint, Run, RunEvent, RunMetric
from runs.presets import DEFAULT_PRESET, PRESETS
from runs.routing import run_waiting_for
from runs.selectors import run_get_for_user
from runs.services import RunRejected, run_cancel, run_create

from .selectors import published_agents

QUESTIONS_PURPOSE = "fine-tune"
DOCUMENT_PURPOSES = ("assistants", "user_data")
MAX_LIMIT = 100
# The new-run form's options a job's hyperparameters may set (RunForm checks their values).
FORM_OPTIONS = (
    "steps",
    "group_size",
    "loss",
    "pack",
    "judge",
    *(f"weight_{c}" for c in COMPONENTS),
)
OPENAI_AUTO_ONLY = ("n_epochs", "batch_size", "learning_rate_multiplier")
STATUSES = {
    Run.Status.QUEUED: "queued",
    Run.Status.PREPARING: "running",
    Run.Status.TRAINING: "running",
    Run.Status.EVALUATING: "running",
    Run.Status.PUBLISHING: "running",
    Run.Status.SUCCEEDED: "succeeded",
    Run.Status.FAILED: "failed",
    Run.Status.CANCELLED: "cancelled",
}
EVENT_LEVELS = {
    RunEvent.Kind.STATUS: "info",
    RunEvent.Kind.INFO: "info",
    RunEvent.Kind.WARNING: "warn",
    RunEvent.Kind.ERROR: "error",
}


class JobsError(Exception):
    """A request refused, as OpenAI would say it."""

    def __init__(self, status: int, message: str, code: str | None = None, param=None):
        super().__init__(message)
        self.status, self.message, self.code, self.param = status, message, code, param


def _not_found(what: str, ident: str) -> JobsError:
    return JobsError(404, f"No such {what}: {ident!r}.", f"{what.replace(' ', '_')}_not_found")


def _timestamp(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment else None


def is_id(text: str) -> bool:
    """ASCII digits that fit a bigint ("²" and "٣" are digits to isdigit, not to int)."""
    return text.isascii() and text.isdecimal() and len(text) <= 18


def _number(ident: str, prefix: str, what: str) -> int:
    rest = ident.removeprefix(prefix) if ident.startswith(prefix) else ""
    if not is_id(rest):
        raise _not_found(what, ident)
    return int(rest)


def page_limit(limit: int | None, default: int, most: int = MAX_LIMIT) -> int:
    if limit is None:
        return default
    if not 1 <= limit <= most:
        raise JobsError(400, f"limit must be between 1 and {most}.", param="limit")
    return limit


def list_page(rows: list, limit: int, shape) -> dict:
    data = [shape(row) for row in rows[:limit]]
    return {
        "object": "list",
        "data": data,
        "has_more": len(rows) > limit,
        "first_id": data[0]["id"] if data else None,
        "last_id": data[-1]["id"] if data else None,
    }


# Projects


def project_for(*, user, project: str | None) -> Project:
    """The caller's project `project` names (an id), else their most recent one."""
    mine = projects_for_user(user=user).order_by("-created_at", "-pk")
    if project:
        found = mine.filter(pk=int(project)).first() if is_id(str(project)) else None
        if found is None:
            raise JobsError(404, f"No such project: {project!r}.", "project_not_found", "project")
        return found
    newest = mine.first()
    if newest is None:
        raise JobsError(
            400,
            "You have no project yet: create one on the website first.",
            "project_not_found",
            "project",
        )
    return newest


# Files


def _question_file(question_set: QuestionSet) -> dict:
    return {
        "id": f"file-{question_set.pk}",
        "object": "file",
        "bytes": question_set.size,
        "created_at": _timestamp(question_set.created_at),
        "filename": question_set.name,
        "purpose": QUESTIONS_PURPOSE,
        "status": "processed",
        "status_details": None,
        "project": str(question_set.project_id),
    }


def _document_file(document: Document) -> dict:
    failed = document.status == Document.Status.FAILED
    return {
        "id": f"file-doc-{document.pk}",
        "object": "file",
        "bytes": document.size,
        "created_at": _timestamp(document.created_at),
        "filename": document.name,
        "purpose": "user_data",
        # OpenAI's words: "uploaded" until it is read (a job refuses a project whose
        # documents are all still being read), "processed" once it is, "error" if it failed.
        "status": (
            "error"
            if failed
            else "uploaded"
            if document.status == Document.Status.UPLOADED
            else "processed"
        ),
        "status_details": (document.error or None) if failed else None,
        "project": str(document.project_id),
    }


def file_create(*, user, file: UploadedFile, purpose: str, project: str | None) -> dict:
    """Import a question file ("fine-tune") or upload a document ("assistants", "user_data")
    into the chosen project."""
    if purpose not in (QUESTIONS_PURPOSE, *DOCUMENT_PURPOSES):
        raise JobsError(
            400,
            f"purpose must be {QUESTIONS_PURPOSE!r} (a question file) or one of "
            f"{', '.join(map(repr, DOCUMENT_PURPOSES))} (a document), not {purpose!r}.",
            "invalid_purpose",
            "purpose",
        )
    target = project_for(user=user, project=project)
    if purpose == QUESTIONS_PURPOSE:
        try:
            return _question_file(question_set_import(project=target, file=file))
        except QuestionImportRejected as error:
            lines = "; ".join(
                f"line {line}: {what}" if line else what for line, what in error.problems[:20]
            )
            raise JobsError(
                400, f"{error.name} was not imported: {lines}", "invalid_file", "file"
            ) from None
    try:
        return _document_file(document_upload(project=target, file=file))
    except UploadRejected as error:
        raise JobsError(400, str(error), "invalid_file", "file") from None


def _question_sets(user) -> QuerySet[QuestionSet]:
    return QuestionSet.objects.filter(project__owner=user)


def _documents(user) -> QuerySet[Document]:
    return Document.objects.filter(project__owner=user)


def file_get(*, user, file_id: str) -> dict:
    if file_id.startswith("file-doc-"):
        pk = _number(file_id, "file-doc-", "file")
        document = _documents(user).filter(pk=pk).first()
        if document is None:
            raise _not_found("file", file_id)
        return _document_file(document)
    question_set = _question_sets(user).filter(pk=_number(file_id, "file-", "file")).first()
    if question_set is None:
        raise _not_found("file", file_id)
    return _question_file(question_set)


def files_list(
    *, user, project: str | None, purpose: str | None, after: str | None, limit: int | None
) -> dict:
    """The caller's files, newest first: question sets and documents together."""
    limit = page_limit(limit, 10_000, most=10_000)
    question_sets, documents = _question_sets(user), _documents(user)
    if project:
        chosen = project_for(user=user, project=project)
        question_sets, documents = (
            question_sets.filter(project=chosen),
            documents.filter(project=chosen),
        )
    found = []
    if purpose in (None, "", QUESTIONS_PURPOSE):
        found += [(q.created_at, q.pk, _question_file(q)) for q in question_sets]
    if purpose in (None, "", *DOCUMENT_PURPOSES):
        found += [(d.created_at, d.pk, _document_file(d)) for d in documents]
    found.sort(key=lambda row: row[:2], reverse=True)
    files = [file for _, _, file in found]
    if after:
        ids = [f["id"] for f in files]
        if after not in ids:
            raise _not_found("file", after)
        files = files[ids.index(after) + 1 :]
    return list_page(files, limit, lambda f: f)


# Fine-tuning jobs


def _job_id(run: Run) -> str:
    return f"ftjob-{run.pk}"


def _run_for(user, job_id: str) -> Run:
    try:
        return run_get_for_user(user=user, run_id=_number(job_id, "ftjob-", "fine-tuning job"))
    except Http404:
        raise _not_found("fine-tuning job", job_id) from None


def _agent_names(user) -> dict[int, str]:
    return {agent.run_id: name for name, agent in published_agents(user=user).items()}


def _job(run: Run, agents: dict[int, str]) -> dict:
    config = run.config or {}
    status = STATUSES.get(run.status, "running")
    hyperparameters = {key: "auto" for key in OPENAI_AUTO_ONLY}
    hyperparameters.update(
        steps=config.get("steps"),
        group_size=config.get("group_size"),
        loss=(config.get("loss") or {}).get("kind"),
        pack=config.get("pack") or None,
    )
    return {
        "id": _job_id(run),
        "object": "fine_tuning.job",
        "created_at": _timestamp(run.created_at),
        "finished_at": _timestamp(run.finished_at),
        "estimated_finish": None,
        "model": run.preset or DEFAULT_PRESET,
        "fine_tuned_model": agents.get(run.pk) if status == "succeeded" else None,
        "organization_id": f"user-{run.project.owner_id}",
        "project": str(run.project_id),
        "status": status,
        "error": (
            {"code": "run_failed", "message": run.status_reason or "The run failed.", "param": None}
            if status == "failed"
            else None
        ),
        "hyperparameters": hyperparameters,
        "method": {"type": "reinforcement"},
        "training_file": f"file-{run.question_set_id}" if run.question_set_id else None,
        "validation_file": None,
        "result_files": [],
        "trained_tokens": None,
        "seed": config.get("seed", 0),
        "user_provided_suffix": run.name,
        "integrations": [],
        "metadata": None,
        "sleuth": {
            "run_status": run.status,
            "status_reason": run.status_reason,
            # What the run waits for while no connected worker can take it (runs.routing).
            "waiting_for": run_waiting_for(run) or None,
            "current_step": run.current_step,
            "total_steps": run.total_steps,
        },
    }


def _hyperparameters(given: dict | None, method: dict | None) -> dict:
    """The hyperparameters of the request and of its `method` (OpenAI's newer form)."""
    merged = dict(given or {})
    if method:
        kind = method.get("type")
        inner = method.get(kind) if isinstance(kind, str) else None
        if isinstance(inner, dict) and isinstance(inner.get("hyperparameters"), dict):
            merged.update(inner["hyperparameters"])
    return merged


def _form_data(hyperparameters: dict) -> dict:
    data = {}
    for key, value in hyperparameters.items():
        if key in OPENAI_AUTO_ONLY:
            if value != "auto":
                raise JobsError(
                    400,
                    f"hyperparameters.{key} can only be 'auto' here: a Sleuth run is shaped by "
                    f"its preset and these options: {', '.join(FORM_OPTIONS)}.",
                    "invalid_hyperparameter",
                    f"hyperparameters.{key}",
                )
            continue
        if key not in FORM_OPTIONS:
            raise JobsError(
                400,
                f"Unknown hyperparameter {key!r}: a job may set {', '.join(FORM_OPTIONS)} "
                f"(and {', '.join(OPENAI_AUTO_ONLY)} as 'auto').",
                "invalid_hyperparameter",
                f"hyperparameters.{key}",
            )
        if value is None or isinstance(value, dict | list):
            raise JobsError(
                400,
                f"hyperparameters.{key} must be a number or a string.",
                "invalid_hyperparameter",
                f"hyperparameters.{key}",
            )
        data[key] = str(value)
    return data


def job_create(
    *,
    user,
    training_file: str,
    model: str,
    hyperparameters: dict | None = None,
    method: dict | None = None,
    suffix: str | None = None,
    validation_file: str | None = None,
) -> dict:
    """Start a run on the training file's question set, in that file's project."""
    if validation_file:
        raise JobsError(
            400,
            "validation_file is not used: a run holds back part of its training file to "
            "validate on.",
            "invalid_validation_file",
            "validation_file",
        )
    preset = DEFAULT_PRESET if model == "default" else model
    if preset not in PRESETS:
        raise JobsError(
            400,
            f"Unknown model {model!r}: choose a preset ({', '.join(PRESETS)}) or 'default'.",
            "model_not_found",
            "model",
        )
    if not training_file.startswith("file-") or training_file.startswith("file-doc-"):
        raise JobsError(
            400,
            "training_file must be a file uploaded with purpose 'fine-tune'.",
            "invalid_training_file",
            "training_file",
        )
    question_set = (
        _question_sets(user)
        .select_related("project")
        .filter(pk=_number(training_file, "file-", "file"))
        .first()
    )
    if question_set is None:
        raise _not_found("file", training_file)
    project = question_set.project
    name = (suffix or "").strip() or f"{PRESETS[preset]['label']} run"
    data = {
        "name": name[:120],
        "preset": preset,
        "question_set": str(question_set.pk),
        **_form_data(_hyperparameters(hyperparameters, method)),
    }
    form = RunForm(data=data, project=project)
    if not form.is_valid():
        key, errors = next(iter(form.errors.items()))
        param = "suffix" if key == "name" else f"hyperparameters.{key}"
        if key == "__all__":
            param = "hyperparameters"
        raise JobsError(
            400, f"{param}: {' '.join(errors)}", "invalid_hyperparameter", param
        ) from None
    try:
        run = run_create(
            project=project,
            user=user,
            name=form.cleaned_data["name"],
            question_set=question_set,
            preset=preset,
            options=form.options(),
        )
    except RunRejected as error:
        raise JobsError(400, str(error), "job_rejected") from None
    run = Run.objects.select_related("project").get(pk=run.pk)
    return _job(run, {})


def job_get(*, user, job_id: str) -> dict:
    run = _run_for(user, job_id)
    return _job(run, _agent_names(user) if run.status == Run.Status.SUCCEEDED else {})


def jobs_list(*, user, project: str | None, after: str | None, limit: int | None) -> dict:
    """The caller's jobs, newest first; `after` a job id of the previous page."""
    limit = page_limit(limit, 20)
    runs = Run.objects.filter(project__owner=user).select_related("project")
    if project:
        runs = runs.filter(project=project_for(user=user, project=project))
    if after:
        cursor = _run_for(user, after)
        runs = runs.filter(
            Q(created_at__lt=cursor.created_at) | Q(created_at=cursor.created_at, pk__lt=cursor.pk)
        )
    rows = list(runs.order_by("-created_at", "-pk")[: limit + 1])
    agents = _agent_names(user) if any(r.status == Run.Status.SUCCEEDED for r in rows) else {}
    return list_page(rows, limit, lambda run: _job(run, agents))


def job_cancel(*, user, job_id: str) -> dict:
    run = _run_for(user, job_id)
    try:
        run_cancel(run=run, user=user)
    except RunRejected as error:  # not reached: the lookup is scoped to the owner
        raise _not_found("fine-tuning job", job_id) from error
    return job_get(user=user, job_id=job_id)


def _event(event: RunEvent) -> dict:
    return {
        "id": f"ftevent-{event.pk}",
        "object": "fine_tuning.job.event",
        "created_at": _timestamp(event.at),
        "level": EVENT_LEVELS.get(event.kind, "info"),
        "message": event.message,
        "type": "message",
        "data": {"status": event.status} if event.status else {},
    }


def job_events(*, user, job_id: str, after: str | None, limit: int | None) -> dict:
    """The run's events, newest first (as OpenAI lists them); `after` an event id."""
    run = _run_for(user, job_id)
    limit = page_limit(limit, 20)
    events = run.events.all()
    if after:
        cursor = events.filter(pk=_number(after, "ftevent-", "event")).first()
        if cursor is None:
            raise _not_found("event", after)
        events = events.filter(Q(at__lt=cursor.at) | Q(at=cursor.at, pk__lt=cursor.pk))
    return list_page(list(events.order_by("-at", "-pk")[: limit + 1]), limit, _event)


def job_checkpoints(*, user, job_id: str, after: str | None, limit: int | None) -> dict:
    """The run's checkpoints, latest step first, with the step's validation numbers and its
    training metrics where they were recorded."""
    run = _run_for(user, job_id)
    limit = page_limit(limit, 10)
    checkpoints = Checkpoint.objects.filter(run=run)
    if after:
        cursor = checkpoints.filter(pk=_number(after, "ftckpt-", "checkpoint")).first()
        if cursor is None:
            raise _not_found("checkpoint", after)
        checkpoints = checkpoints.filter(step__lt=cursor.step)
    rows = list(checkpoints.order_by("-step")[: limit + 1])
    steps = {c.step for c in rows}
    trained = dict(RunMetric.objects.filter(run=run, step__in=steps).values_list("step", "data"))
    agent = _agent_names(user).get(run.pk) if run.status == Run.Status.SUCCEEDED else None

    def shape(checkpoint: Checkpoint) -> dict:
        published = checkpoint.is_final and agent
        return {
            "id": f"ftckpt-{checkpoint.pk}",
            "object": "fine_tuning.job.checkpoint",
            "created_at": _timestamp(checkpoint.created_at),
            "fine_tuned_model_checkpoint": (
                agent if published else f"{_job_id(run)}:step-{checkpoint.step}"
            ),
            "fine_tuning_job_id": _job_id(run),
            "step_number": checkpoint.step,
            "metrics": {
                "step": checkpoint.step,
                **{k: v for k, v in trained.get(checkpoint.step, {}).items() if k != "step"},
                **(checkpoint.metrics or {}),
            },
            "is_final": checkpoint.is_final,
        }

    return list_page(rows, limit, shape)
