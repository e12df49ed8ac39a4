"""Writes for projects, documents and question sets. Files go to the uploads bucket on S3."""

import hashlib
import json
import logging
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.text import get_valid_filename

from core.s3 import s3_client
from workers.documents.corpus import infer_entity, read_pages_jsonl
from workers.documents.sandbox import parse_files

from .models import Document, Project, Question, QuestionSet
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
    return get_valid_filename(Path(name).name) or "file"


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
        used = account_storage_used(user=project.owner)
        if used + file.size > settings.ACCOUNT_QUOTA_BYTES:
            raise UploadRejected(
                f"{name} would take your account over its "
                f"{filesizeformat(settings.ACCOUNT_QUOTA_BYTES)} quota "
                f"({filesizeformat(used)} used). Delete documents you no longer need."
            )
        s3_client().upload_fileobj(
            file, settings.S3_UPLOADS_BUCKET, key, ExtraArgs={"ContentType": CONTENT_TYPES[kind]}
        )
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
        except Exception:
            s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)
            raise
    transaction.on_commit(lambda: _enqueue("workers.tasks.document_parse", document.pk))
    return document


def _enqueue(task: str, *args) -> None:
    from config.celery import app

    app.send_task(task, args=list(args))


def document_parse(*, document_id: int) -> Document | None:
    """Parse an uploaded document with the engine and record its sections, page count and
    status (parsed, or failed with the reason in plain words).

    Returns None when there is nothing to do: the document is gone, or another worker
    already claimed it. The parse runs in the engine's sandbox (a child process under
    time and memory limits), since the file is untrusted.
    """
    claimed = Document.objects.filter(
        pk=document_id, status=Document.Status.UPLOADED, parse_started_at=None
    ).update(parse_started_at=timezone.now())
    if not claimed:
        return None
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
    document.save(update_fields=["status", "error", "pages", "sections_key"])
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
    document.entity = entity.strip()
    document.save(update_fields=["entity"])
    return document


def document_delete(*, document: Document) -> None:
    key = document.s3_key
    document.delete()
    transaction.on_commit(
        lambda: s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)
    )


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
    return question_set


def question_set_delete(*, question_set: QuestionSet) -> None:
    key = question_set.s3_key
    question_set.delete()
    transaction.on_commit(
        lambda: s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)
    )
