"""Uploading a question file, whatever it holds: the owner gets the project page back with
the questions imported (302) or with what is wrong with the file (400), never a server
error, and a refused file stores nothing (hypothesis generates the files)."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from corpora.models import QuestionSet
from corpora.services import project_create

pytestmark = pytest.mark.django_db

# Each example is a real upload (database and S3), so fewer than the engine's parser gets.
PROPERTY = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

VALUES = st.none() | st.integers() | st.floats() | st.text(max_size=20) | st.lists(st.text())
RECORDS = st.fixed_dictionaries(
    {"question": VALUES, "answer": VALUES},
    optional={
        "id": VALUES,
        "entity": VALUES,
        "evidence": VALUES
        | st.lists(st.dictionaries(st.sampled_from(["text", "page", "doc"]), VALUES)),
    },
)
JSONL = st.lists(RECORDS.map(json.dumps) | st.text(max_size=40), min_size=1, max_size=5).map(
    lambda lines: "\n".join(lines).encode()
)
CSV = st.lists(st.lists(st.text(max_size=15), max_size=4).map(",".join), max_size=5).map(
    lambda rows: "\n".join(["question,answer,evidence_page", *rows]).encode()
)


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


@PROPERTY
@given(
    content=JSONL | CSV | st.binary(max_size=200),
    name=st.sampled_from(["qa.jsonl", "qa.csv", "qa.txt", "qa.JSONL"]),
)
@example(content=b'{"question": "Q?", "answer": ' + b"9" * 5000 + b"}", name="qa.jsonl")
@example(content=b"\xff\xfe\x00", name="qa.csv")
def test_any_question_file_is_imported_or_refused_with_a_reason(
    client, alice, project, content, name
):
    client.force_login(alice)
    before = QuestionSet.objects.count()

    response = client.post(
        f"/projects/{project.pk}/question-sets/upload/",
        {"file": SimpleUploadedFile(name, content)},
    )

    assert response.status_code in (302, 400)
    if response.status_code == 400:
        assert "was not imported" in response.content.decode()
        assert QuestionSet.objects.count() == before
    else:
        assert QuestionSet.objects.count() == before + 1
