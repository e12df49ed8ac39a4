"""Writes for projects, documents and question sets. Files go to the uploads bucket on S3."""

import hashlib
import json
import logging
import tempfile
import uuid
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import F
from django.db.models.functions import Coalesce, Now
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.text import get_valid_filename

from core.local_copies import purge_everywhere
from core.s3 import delete_s3_prefix, s3_client
from engine.documents.corpus import infer_entity, read_pages_jsonl
from engine.documents.sandbox import parse_files
from engine.packs import suggested_pack

from .indexing import echo_recall_enqueue, project_index_enqueue
from .models import Document, Project, Question, QuestionSet
from .parse_deadlines import parse_running_deadline
from .parse_slots import parses_admit, parses_admit_quietly
from .question_files import QuestionFileError, validate_question_file
from .selectors import account_storage_used
from .sniffing import CONTENT_TYPES, UnsupportedFile, sniff_kind

logger = logging.getLogger(__name__)


class UploadRejected(ValueError):
    """An upload that was refused; the message tells the customer why and what to do."""


def project_create(*, owner, name: str) -> Project:
    return Project.objects.create(owner=owner, name=name.strip())


def _sha256(file) -> str:
    digest = hashlib.sha256()
    file.seek(0)
    for block in iter(lambda: file.read(1 << 20), b""):
        digest.update(block)
    file.seek(0)
    return digest.hexdigest()


def _safe_name(name: str) -> str:
    """The file name as a key or path part; "file" when nothing of it is safe ("$$$", "..")."""
    try:
        return get_valid_filename(Path(name).name)
    except SuspiciousFileOperation:
        return "file"


def document_upload(*, project: Project, file: UploadedFile) -> Document:
    """Check one uploaded file (size, content type, quota), store it on S3, record it."""
    name = Path(file.name or "file").name
    if file.size == 0:
        raise UploadRejected(f"{name} is empty.")
    if file.size > settings.DOCUMENT_MAX_BYTES:
        raise UploadRejected(
            f"{name} is {filesizeformat(file.size)}; the limit is "
            f"{filesizeformat(settings.DOCUMENT_MAX_BYTES)} per file."
        )
    try:
        kind = sniff_kind(name=name, file=file)
    except UnsupportedFile as error:
        raise UploadRejected(str(error)) from None
    sha256 = _sha256(file)
    key = f"projects/{project.pk}/documents/{uuid.uuid4().hex}/{_safe_name(name)}"
    with transaction.atomic():
        # One upload at a time per account, so two parallel uploads cannot both fit the quota.
        get_user_model().objects.select_for_update().get(pk=project.owner_id)
        duplicate = project.documents.filter(sha256=sha256).first()
        if duplicate:
            raise UploadRejected(f"{name} is already in this project (as {duplicate.name}).")
        over = _over_quota(owner=project.owner, name=name, size=file.size)
        if over:
            raise UploadRejected(over)
        try:
            s3_client().upload_fileobj(
                file,
                settings.S3_UPLOADS_BUCKET,
                key,
                ExtraArgs={"ContentType": CONTENT_TYPES[kind]},
            )
        except (BotoCoreError, ClientError):
            # The store is down or restarting: nothing was recorded, the customer retries.
            logger.warning("upload of %s to %s failed", name, key, exc_info=True)
            raise UploadRejected(
                f"{name} could not be stored just now (our file store did not answer); "
                "nothing was saved. Try again in a minute."
            ) from None
        try:
            document = Document.objects.create(
                project=project,
                name=name,
                kind=kind,
                content_type=CONTENT_TYPES[kind],
                size=file.size,
                sha256=sha256,
                s3_key=key,
                entity=infer_entity(name) or "",
            )
            # Queued now if the account has a free parse slot (the task is sent on commit,
            # or by the sweep, later), else it waits for its turn (corpora.parse_slots).
            parses_admit(owner_id=project.owner_id)
        except Exception:
            s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)
            raise
        document.refresh_from_db(fields=["parse_queued_at", "parse_deadline"])
    return document


def _over_quota(*, owner, name: str, size: int) -> str:
    """Why `size` more bytes do not fit the account's storage quota ("" when they do)."""
    used = account_storage_used(user=owner)
    if used + size <= settings.ACCOUNT_QUOTA_BYTES:
        return ""
    return (
        f"{name} ({filesizeformat(size)}) would take your account over its "
        f"{filesizeformat(settings.ACCOUNT_QUOTA_BYTES)} quota: "
        f"{filesizeformat(used)} used by documents, question sets and runs' checkpoints, "
        f"{filesizeformat(max(settings.ACCOUNT_QUOTA_BYTES - used, 0))} left. "
        "Delete documents, question sets or runs you no longer need."
    )


# A filing names its form, its statements and its fiscal year within its first pages.
PAGES_READ_FOR_PACK = 5


def document_parse(*, document_id: int) -> Document | None:
    """Parse an uploaded document with the engine and record its sections, page count and
    status (parsed, or failed with the reason in plain words).

    Returns None when there is nothing to do: the document is gone, or another worker
    already claimed it. The parse runs in the engine's sandbox (a child process under
    time and memory limits), since the file is untrusted. However it ends, its account's
    parse slot is free and its next waiting document is queued (corpora.parse_slots).
    """
    claimed = Document.objects.filter(
        pk=document_id, status=Document.Status.UPLOADED, parse_started_at=None
    ).update(
        parse_started_at=timezone.now(),
        parse_deadline=parse_running_deadline(),
        # Set already when it was queued; a parse asked for directly (a test, a shell) holds
        # one of its account's slots while it runs, as a queued one does.
        parse_queued_at=Coalesce(F("parse_queued_at"), Now()),
    )
    if not claimed:
        return None
    owner = Project.objects.filter(documents=document_id).values_list("owner_id", flat=True)
    owner_id = owner.first()
    try:
        return _document_parse_claimed(document_id)
    finally:
        if owner_id is not None:
            parses_admit_quietly(owner_id=owner_id)


def _document_parse_claimed(document_id: int) -> Document | None:
    document = Document.objects.get(pk=document_id)
    try:
        sections = _parse_sections(document)
    except _ParseFailed as failure:
        document.status, document.error = Document.Status.FAILED, str(failure)
        document.save(update_fields=["status", "error"])
        return document
    except Exception:
        logger.exception("parsing document %s failed", document_id)
        document.status = Document.Status.FAILED
        document.error = (
            "Something went wrong on our side while reading this file. Upload it again."
        )
        document.save(update_fields=["status", "error"])
        raise
    key = f"projects/{document.project_id}/documents/{document.pk}/sections.jsonl"
    body = "".join(
        json.dumps({"page": s.page, "title": s.title, "text": s.text}, ensure_ascii=False) + "\n"
        for s in sections
    )
    s3_client().put_object(
        Bucket=settings.S3_ARTIFACTS_BUCKET,
        Key=key,
        Body=body.encode(),
        ContentType="application/jsonl",
    )
    document.status, document.error = Document.Status.PARSED, ""
    document.pages, document.sections_key = len(sections), key
    document.looks_like = suggested_pack([" ".join(s.text for s in sections[:PAGES_READ_FOR_PACK])])
    recorded = Document.objects.filter(pk=document.pk).update(
        status=document.status,
        error="",
        pages=document.pages,
        sections_key=key,
        looks_like=document.looks_like,
    )
    if not recorded:  # deleted while it was parsed: its text must not stay behind
        s3_client().delete_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key)
        return None
    # Searchable at once, not only when a run starts (queued coalesced: one build per burst).
    transaction.on_commit(lambda: project_index_enqueue(document.project_id))
    return document


class _ParseFailed(Exception):
    pass


def _parse_sections(document: Document) -> list:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / _safe_name(document.name)
        s3_client().download_file(settings.S3_UPLOADS_BUCKET, document.s3_key, str(path))
        if document.kind == Document.Kind.PAGES_JSONL:
            try:
                docs = read_pages_jsonl(path)
            except ValueError as error:
                raise _ParseFailed(
                    f"Some lines of {document.name} are not pages: {error}"
                ) from None
            sections = [s for _, doc_sections in docs.values() for s in doc_sections]
        else:
            parsed = next(iter(parse_files([path])))
            if parsed.error:
                raise _ParseFailed(f"Could not read {document.name}: {parsed.error}.")
            sections = parsed.sections
    if not any(s.text.strip() for s in sections):
        raise _ParseFailed(f"Could not read {document.name}: no text found in it.")
    return sections


def document_set_entity(*, document: Document, entity: str) -> Document:
    """Set the document's entity; its project's index is built again (`[scope]` searches
    and the chunks name the entity)."""
    entity = entity.strip()
    changed = entity != document.entity
    document.entity = entity
    document.save(update_fields=["entity"])
    if changed and document.sections_key:
        transaction.on_commit(lambda: project_index_enqueue(document.project_id))
    return document


# -- deletion -----------------------------------------------------------------------------
#
# Deleting removes every object derived from the thing, on S3 and in the database. The S3
# objects go first: should that fail half-way, the rows still point at what is left and
# deleting again finishes the job (a row gone first would leave objects nobody can find).
# Runs read documents and index builds while active, so nothing is deleted under a running
# run; the owner's row is locked, as run_create locks it, so no run starts meanwhile.


class DeletionRefused(ValueError):
    """A deletion that cannot happen now; the message says why and what to do."""


def _lock_owner_without_active_runs(*, owner, projects) -> None:
    from runs.models import Run

    get_user_model().objects.select_for_update().get(pk=owner.pk)
    active = list(
        Run.objects.filter(project__in=projects, status__in=Run.ACTIVE).values_list(
            "name", flat=True
        )
    )
    if active:
        names = ", ".join(active[:3]) + (" …" if len(active) > 3 else "")
        raise DeletionRefused(
            f"{len(active)} run(s) still use these documents ({names}). Cancel them, or wait "
            "until they end, then delete again."
        )


def _index_builds_holding(document: Document) -> list[str]:
    """The project's index builds ("projects/P/index/F/") holding chunks of `document`. A
    build that cannot be read counts as holding it: when unsure, delete (a build is a cache
    the next run rebuilds)."""
    from engine.search.store import file_key, read_manifest

    client, bucket = s3_client(), settings.S3_ARTIFACTS_BUCKET
    listing = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=f"projects/{document.project_id}/index/", Delimiter="/"
    )
    builds = [p["Prefix"] for page in listing for p in page.get("CommonPrefixes", [])]
    holding = []
    for build in builds:
        try:
            prefix = build.rstrip("/")
            key = file_key(prefix, read_manifest(client, bucket, prefix), "chunks.jsonl")
            body = client.get_object(Bucket=bucket, Key=key)["Body"]
            held = any(
                json.loads(line).get("doc") == document.name
                for line in body.iter_lines()
                if line.strip()
            )
        except (client.exceptions.ClientError, ValueError):
            held = True
        if held:
            holding.append(build)
    return holding


def _runs_searching(project: Project, builds: list[str]) -> list:
    return list(project.runs.filter(index_prefix__in=[b.rstrip("/") for b in builds]))


def document_runs_derived(*, document: Document) -> list:
    """The runs that searched `document` (their index build holds it): their trajectories,
    checkpoints and published archive hold its text, so they go with it."""
    return _runs_searching(document.project, _index_builds_holding(document))


def document_delete(*, document: Document) -> list[str]:
    """Delete a document with everything made from it: the uploaded file, its parsed text,
    the index builds that hold it and the runs that searched it. Returns the names of the
    runs deleted with it. DeletionRefused while a run of the project is active."""
    from runs.services import run_delete_objects

    with transaction.atomic():
        _lock_owner_without_active_runs(owner=document.project.owner, projects=[document.project])
        builds = _index_builds_holding(document)
        runs = _runs_searching(document.project, builds)
        # Questions generated from the documents quote them.
        generated = QuestionSet.objects.filter(
            runs__in=runs, s3_key__contains="/question-sets/generated-"
        ).distinct()
        for question_set in generated:
            question_set_delete(question_set=question_set)
        for run in runs:
            run_delete_objects(run=run)
        for build in builds:
            delete_s3_prefix(settings.S3_ARTIFACTS_BUCKET, build)
        if f"{document.project.index_prefix}/" in builds:  # the search page's index went
            Project.objects.filter(pk=document.project_id).update(index_prefix="")
        project_id, owner_id = document.project_id, document.project.owner_id
        transaction.on_commit(lambda: project_index_enqueue(project_id))
        # A document queued or being parsed held a parse slot: the account's next takes it.
        transaction.on_commit(lambda: parses_admit_quietly(owner_id=owner_id))
        if document.sections_key:
            s3_client().delete_object(
                Bucket=settings.S3_ARTIFACTS_BUCKET, Key=document.sections_key
            )
        s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=document.s3_key)
        document.delete()
    return [run.name for run in runs]


def project_delete(*, project: Project) -> None:
    """Delete a project with its documents, question sets, index builds and runs: every
    object under its prefix in both buckets, then its rows. DeletionRefused while one of
    its runs is active."""
    with transaction.atomic():
        _lock_owner_without_active_runs(owner=project.owner, projects=[project])
        for bucket in (settings.S3_UPLOADS_BUCKET, settings.S3_ARTIFACTS_BUCKET):
            delete_s3_prefix(bucket, f"projects/{project.pk}/")
        owner_id, folder = project.owner_id, f"projects/{project.pk}/"
        project.delete()
        transaction.on_commit(lambda: purge_everywhere(folder))  # its copies on every disk
        # Its documents in flight held parse slots: the account's other projects' go next.
        transaction.on_commit(lambda: parses_admit_quietly(owner_id=owner_id))


class QuestionImportRejected(ValueError):
    """A question file that was not imported; `problems` lists (line, what is wrong)."""

    def __init__(self, name: str, problems: list[tuple[int, str]]):
        self.name = name
        self.problems = problems
        super().__init__(f"{name}: {len(problems)} problem(s), nothing was imported")


def question_set_import(*, project: Project, file: UploadedFile) -> QuestionSet:
    """Validate a whole JSONL or CSV question file, then store it and its questions at once.

    Nothing is imported unless every line is good.
    """
    name = Path(file.name or "questions.jsonl").name
    suffix = Path(name).suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise QuestionImportRejected(name, [(0, "upload a .jsonl or .csv file")])
    if file.size > settings.QUESTION_FILE_MAX_BYTES:
        raise QuestionImportRejected(
            name,
            [
                (
                    0,
                    (
                        f"the file is {filesizeformat(file.size)}; the limit is "
                        f"{filesizeformat(settings.QUESTION_FILE_MAX_BYTES)}"
                    ),
                )
            ],
        )
    over = _over_quota(owner=project.owner, name=name, size=file.size)
    if over:
        raise QuestionImportRejected(name, [(0, over)])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"questions{suffix}"
        with open(path, "wb") as out:
            for chunk in file.chunks():
                out.write(chunk)
        try:
            parsed = validate_question_file(path)
        except QuestionFileError as error:
            raise QuestionImportRejected(name, error.problems) from None
        key = f"projects/{project.pk}/question-sets/{uuid.uuid4().hex}/{_safe_name(name)}"
        s3_client().upload_file(str(path), settings.S3_UPLOADS_BUCKET, key)
    try:
        with transaction.atomic():
            # As for documents: one upload at a time per account, checked again under the lock.
            get_user_model().objects.select_for_update().get(pk=project.owner_id)
            over = _over_quota(owner=project.owner, name=name, size=file.size)
            if over:
                raise QuestionImportRejected(name, [(0, over)])
            question_set = QuestionSet.objects.create(
                project=project, name=name, s3_key=key, size=file.size
            )
            Question.objects.bulk_create(
                Question(
                    question_set=question_set,
                    position=q.position,
                    external_id=q.external_id,
                    question=q.question,
                    answer=q.answer,
                    entity=q.entity,
                    evidence=q.evidence,
                )
                for q in parsed
            )
    except Exception:
        s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)
        raise
    if project.index_prefix:  # else the first index build measures it
        transaction.on_commit(lambda: echo_recall_enqueue(project.pk, question_set.pk))
    return question_set


def question_set_delete(*, question_set: QuestionSet) -> None:
    s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=question_set.s3_key)
    question_set.delete()


def question_file_body(rows) -> bytes:
    """A question set's JSONL file as its rows say (what question_set_add_question and the
    review of a generated set write back to S3)."""
    lines = []
    for q in rows:
        record = {"id": q.external_id, "question": q.question, "answer": q.answer}
        if q.entity:
            record["entity"] = q.entity
        if q.evidence:
            record["evidence"] = q.evidence
        lines.append(json.dumps(record))
    return ("\n".join(lines) + "\n").encode() if lines else b""


def question_file_check(*, project: Project, name: str, body: bytes, old_size: int) -> None:
    """Refuse (QuestionImportRejected) a rewritten set file past the question file limit or
    the account's quota. Call it under the owner's lock, as uploads do."""
    if len(body) > settings.QUESTION_FILE_MAX_BYTES:
        limit = filesizeformat(settings.QUESTION_FILE_MAX_BYTES)
        raise QuestionImportRejected(name, [(0, f"the set would pass {limit}")])
    over = _over_quota(owner=project.owner, name=name, size=max(len(body) - old_size, 0))
    if over:
        raise QuestionImportRejected(name, [(0, over)])


def question_file_put(*, question_set: QuestionSet, body: bytes) -> None:
    """Write the set's file on S3 and record its size. Call it inside the transaction that
    changed the rows: a failed write leaves neither the rows nor the new size."""
    question_set.size = len(body)
    question_set.save(update_fields=["size"])
    s3_client().put_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=question_set.s3_key, Body=body)


def question_set_add_question(
    *, project: Project, set_name: str, question: str, answer: str
) -> QuestionSet:
    """Add one question with its answer to the project's question set named `set_name` (the
    newest, created on first use), as an upload would: the set's JSONL file on S3 is written
    again with the new line, under the account's storage quota and the question file limit.
    Raises QuestionImportRejected with the reason when it does not fit."""
    question, answer = question.strip(), answer.strip()
    if not question or not answer:
        raise QuestionImportRejected(set_name, [(0, "a question and its answer are needed")])
    with transaction.atomic():
        # One write at a time per account, as for uploads: the quota is checked under the lock.
        get_user_model().objects.select_for_update().get(pk=project.owner_id)
        question_set = (
            QuestionSet.objects.select_for_update()
            .filter(project=project, name=set_name)
            .order_by("-created_at", "-pk")
            .first()
        )
        rows = list(question_set.questions.all()) if question_set else []
        position = max((q.position for q in rows), default=0) + 1
        added = Question(
            position=position,
            external_id=f"playground-{position}",
            question=question,
            answer=answer,
        )
        body = question_file_body([*rows, added])
        old_size = question_set.size if question_set else 0
        question_file_check(project=project, name=set_name, body=body, old_size=old_size)
        if question_set is None:
            key = (
                f"projects/{project.pk}/question-sets/{uuid.uuid4().hex}/from-the-playground.jsonl"
            )
            question_set = QuestionSet.objects.create(
                project=project, name=set_name, s3_key=key, size=len(body)
            )
        added.question_set = question_set
        added.save()
        question_file_put(question_set=question_set, body=body)
    if project.index_prefix:
        transaction.on_commit(lambda: echo_recall_enqueue(project.pk, question_set.pk))
    return question_set
