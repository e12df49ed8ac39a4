"""The account's storage quota (issue 14.5) counts documents, question sets and its runs'
checkpoints and archives; a question file that does not fit is refused with what is used,
what is left and what to delete, and nothing of it is stored."""

import json

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from core.s3 import s3_client
from corpora.models import Document, QuestionSet
from corpora.selectors import account_storage_used
from corpora.services import project_create
from runs.models import Checkpoint, Run

pytestmark = pytest.mark.django_db

QUESTIONS = "".join(
    json.dumps({"question": f"What was the margin in {year}?", "answer": f"{year % 50}%"}) + "\n"
    for year in (2019, 2020, 2021)
)


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def upload_questions(client, project, name="qa.jsonl"):
    return client.post(
        f"/projects/{project.pk}/question-sets/upload/",
        {"file": SimpleUploadedFile(name, QUESTIONS.encode())},
    )


def document(project, size: int) -> Document:
    return Document.objects.create(
        project=project,
        name="10K.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=size,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/10k.pdf",
    )


def run_with_checkpoint(project, size: int) -> Run:
    run = Run.objects.create(project=project, name="Margins", status=Run.Status.SUCCEEDED)
    Checkpoint.objects.create(
        run=run, step=4, s3_prefix=f"runs/{run.pk}/checkpoints/4", size_bytes=size
    )
    return run


def uploaded_question_files(project) -> list[str]:
    listing = s3_client().list_objects_v2(
        Bucket=settings.S3_UPLOADS_BUCKET, Prefix=f"projects/{project.pk}/question-sets/"
    )
    return [item["Key"] for item in listing.get("Contents", [])]


def test_question_sets_and_run_checkpoints_count_toward_the_storage_used(
    client_alice, project, alice
):
    document(project, 1000)
    run_with_checkpoint(project, 5000)
    upload_questions(client_alice, project)

    assert account_storage_used(user=alice) == 1000 + 5000 + len(QUESTIONS.encode())


def test_a_question_file_over_the_remaining_quota_is_refused_with_what_is_left(
    client_alice, project
):
    document(project, 1000)
    with override_settings(ACCOUNT_QUOTA_BYTES=1000 + len(QUESTIONS.encode()) - 1):
        response = upload_questions(client_alice, project)

    html = response.content.decode()
    assert response.status_code == 400
    assert "qa.jsonl was not imported" in html
    assert "would take your account over its" in html and "quota" in html
    assert "left" in html and "Delete documents, question sets or runs" in html
    assert not QuestionSet.objects.exists()
    assert uploaded_question_files(project) == []


def test_a_runs_checkpoints_leave_less_room_for_documents(client_alice, project):
    run_with_checkpoint(project, 900)
    with override_settings(ACCOUNT_QUOTA_BYTES=1000):
        response = client_alice.post(
            f"/projects/{project.pk}/documents/upload/",
            {"files": SimpleUploadedFile("notes.txt", b"x" * 200)},
            headers={"accept": "application/json"},
        )

    assert "quota" in response.json()["files"][0]["error"]
    assert not Document.objects.exists()
