"""Question files: JSONL or CSV, validated whole; every bad line reported, nothing half-imported."""

import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from core.s3 import s3_client
from corpora.models import Question, QuestionSet
from corpora.services import project_create

pytestmark = pytest.mark.django_db

QUESTIONS = (
    Path(__file__).parents[2].parent
    / "shared"
    / "datasets"
    / "financebench-dev"
    / "questions.jsonl"
)


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def upload(client, project, name, content: str):
    return client.post(
        f"/projects/{project.pk}/question-sets/upload/",
        {"file": SimpleUploadedFile(name, content.encode())},
    )


def jsonl(*records) -> str:
    return "\n".join(json.dumps(r) for r in records) + "\n"


@pytest.mark.skipif(not QUESTIONS.exists(), reason="shared datasets are not beside the clone")
def test_financebench_questions_import_with_entities_and_evidence(client_alice, project):
    response = upload(client_alice, project, "questions.jsonl", QUESTIONS.read_text())

    assert response.status_code == 302
    question_set = QuestionSet.objects.get()
    assert question_set.questions.count() == 84
    first = question_set.questions.first()
    assert first.entity == "3M" and first.answer == "$1577.00"
    assert first.evidence[0]["doc"] == "3M_2018_10K" and first.evidence[0]["page"] == 60  # 1-based
    body = s3_client().get_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=question_set.s3_key)
    assert body["Body"].read() == QUESTIONS.read_bytes()


def test_a_csv_with_optional_columns_imports(client_alice, project):
    csv_text = (
        "question,answer,evidence,entity\n"
        'What was 3M\'s FY2018 capex?,"$1,577 million",Purchases of PP&E (1577),3M\n'
        "Did Best Buy pay a dividend?,Yes,,\n"
    )

    upload(client_alice, project, "qa.csv", csv_text)

    questions = list(Question.objects.all())
    assert [q.question for q in questions] == [
        "What was 3M's FY2018 capex?",
        "Did Best Buy pay a dividend?",
    ]
    assert questions[0].answer == "$1,577 million" and questions[0].entity == "3M"
    assert questions[0].evidence == [
        {"text": "Purchases of PP&E (1577)", "doc": None, "page": None}
    ]
    assert questions[1].evidence == []


def test_every_bad_line_is_reported_and_nothing_is_imported(client_alice, project):
    content = (
        jsonl({"question": "Revenue in 2022?", "answer": "$5M"})
        + "{not json\n"
        + jsonl({"question": "No answer here?"})
        + jsonl({"question": "Revenue in 2022?", "answer": "$5M"})
    )

    response = upload(client_alice, project, "qa.jsonl", content)

    page = response.content.decode()
    assert response.status_code == 400
    assert "Line 2: not valid JSON" in page
    assert "Line 3: no answer" in page
    assert "Line 4: duplicate id" in page and "(first on line 1)" in page
    assert "Nothing from it was saved" in page
    assert not QuestionSet.objects.exists() and not Question.objects.exists()


def test_a_csv_without_the_needed_columns_is_explained(client_alice, project):
    response = upload(client_alice, project, "qa.csv", "q,a\nx,y\n")

    page = response.content.decode()
    assert "Line 1: the header needs columns [&#x27;answer&#x27;, &#x27;question&#x27;]" in page


def test_an_unsupported_file_type_is_explained(client_alice, project):
    response = upload(client_alice, project, "qa.xlsx", "whatever")

    assert "upload a .jsonl or .csv file" in response.content.decode()
    assert not QuestionSet.objects.exists()
