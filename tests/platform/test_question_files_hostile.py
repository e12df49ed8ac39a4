"""Malformed question files are refused with the line and what is wrong, never a server error
(a 500 would raise in the test client), and nothing of them is imported."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from corpora.models import QuestionSet
from corpora.services import project_create

pytestmark = pytest.mark.django_db

GOOD = json.dumps({"question": "What was revenue?", "answer": "12"})


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def refused(client, alice, project, name: str, body: str) -> str:
    """Upload a question file as alice; the page's text, after checking it was refused."""
    client.force_login(alice)
    response = client.post(
        f"/projects/{project.pk}/question-sets/upload/",
        {"file": SimpleUploadedFile(name, body.encode("utf-8", "surrogatepass"))},
    )
    assert response.status_code == 400
    assert not QuestionSet.objects.exists()
    return response.content.decode()


def jsonl(record: dict | str) -> str:
    line = record if isinstance(record, str) else json.dumps(record)
    return f"{GOOD}\n{line}\n"


@pytest.mark.parametrize(
    ("record", "says"),
    [
        ({"question": "Q?", "answer": "A", "meta": [1, 2]}, "meta must be an object"),
        ({"question": "Q?", "answer": "A", "golden_chunk_ids": 5}, "golden_chunk_ids must be a"),
        (
            {"question": "Q?", "answer": "A", "evidence": [{"text": "t", "chunk_ids": 7}]},
            "chunk_ids must be a list",
        ),
        (
            '{"question": "Q?", "answer": "A", "evidence": [{"text": "t", "page": Infinity}]}',
            "page",
        ),
        ('{"question": "Q?", "answer": "A", "evidence": [{"text": "t", "page": 1e999}]}', "page"),
        ('{"question": "Q?", "answer": "A", "evidence": [{"text": "t", "page": NaN}]}', "page"),
        ({"question": "Q?", "answer": "A", "id": "x" * 201}, "id is longer than 200"),
        ({"question": "Q?", "answer": "A", "entity": "e" * 201}, "entity is longer than 200"),
        ({"question": "Q\u0000?", "answer": "A"}, "NUL"),
        ('{"question": "Q\\ud800?", "answer": "A"}', "not valid Unicode"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_a_bad_jsonl_line_is_reported_with_its_number(client, alice, project, record, says):
    page = refused(client, alice, project, "qa.jsonl", jsonl(record))

    assert "Line 2:" in page and says in page


def test_a_csv_row_with_more_fields_than_the_header_is_reported(client, alice, project):
    page = refused(client, alice, project, "qa.csv", "question,answer\nQ?,A\nQ2?,A2,extra\n")

    assert "Line 3:" in page and "more fields than the header" in page


def test_a_csv_field_of_128_kb_is_reported_not_a_crash(client, alice, project):
    body = f'question,answer,evidence\nQ?,A,"{"x" * 131_073}"\n'

    page = refused(client, alice, project, "qa.csv", body)

    assert "Line 2:" in page and "longer than" in page


def test_nul_bytes_in_a_csv_are_reported(client, alice, project):
    page = refused(client, alice, project, "qa.csv", "question,answer\nQ?,A\x00B\n")

    assert "Line 2:" in page and "NUL" in page


def test_a_long_id_in_a_csv_is_reported(client, alice, project):
    page = refused(client, alice, project, "qa.csv", f"id,question,answer\n{'i' * 300},Q?,A\n")

    assert "Line 2:" in page and "id is longer than 200" in page
