"""Uploaded documents are parsed by a real Celery worker with the engine's parser."""

import json
import time
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from core.s3 import s3_client
from corpora.models import Document
from corpora.selectors import project_suggested_pack
from corpora.services import document_parse, document_upload, project_create

PDFS = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev" / "pdfs"


def settled(document: Document, timeout: float = 120) -> Document:
    """Wait for the worker to move the document past `uploaded` (not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        document.refresh_from_db()
        if document.status != Document.Status.UPLOADED:
            return document
        time.sleep(0.25)
    raise AssertionError(f"{document.name} was not parsed within {timeout}s")


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(not PDFS.is_dir(), reason="shared datasets are not beside the clone")
def test_an_uploaded_filing_is_parsed_page_by_page(celery_worker, alice):
    project = project_create(owner=alice, name="Filings")
    pdf = PDFS / "AMCOR_2023Q4_EARNINGS.pdf"

    document = document_upload(project=project, file=SimpleUploadedFile(pdf.name, pdf.read_bytes()))

    document = settled(document)
    # Parsed, and maybe indexed already: the index build is queued as soon as it is parsed.
    assert (document.status, document.error) in {("parsed", ""), ("indexed", "")}
    body = s3_client().get_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=document.sections_key)
    sections = [json.loads(line) for line in body["Body"].read().decode().splitlines()]
    assert len(sections) == document.pages > 1
    assert [s["page"] for s in sections[:2]] == [1, 2]
    assert "Amcor" in sections[0]["text"]


@pytest.mark.django_db
@pytest.mark.skipif(not PDFS.is_dir(), reason="shared datasets are not beside the clone")
def test_a_parsed_filing_looks_like_the_filings_pack_and_a_manual_like_none(alice):
    project = project_create(owner=alice, name="Mixed")
    pdf = PDFS / "3M_2018_10K.pdf"
    filing = document_upload(project=project, file=SimpleUploadedFile(pdf.name, pdf.read_bytes()))
    manual = document_upload(
        project=project,
        file=SimpleUploadedFile(
            "pump.md", b"# Pump X2 manual\n\nPrime the pump before its first start.\n"
        ),
    )

    assert document_parse(document_id=filing.pk).looks_like == "filings"
    assert document_parse(document_id=manual.pk).looks_like == ""
    assert project_suggested_pack(project=project) == "filings"  # one of two: half


@pytest.mark.django_db(transaction=True)
def test_a_damaged_pdf_fails_with_the_reason_in_plain_words(celery_worker, alice):
    project = project_create(owner=alice, name="Filings")
    broken = SimpleUploadedFile("broken.pdf", b"%PDF-1.7\nthis is not really a PDF\n")

    document = settled(document_upload(project=project, file=broken))

    assert document.status == "failed"
    assert document.error.startswith("Could not read broken.pdf:")
    assert document.pages is None


@pytest.mark.django_db
def test_a_document_is_parsed_once_even_if_asked_twice(alice):
    project = project_create(owner=alice, name="Notes")
    document = document_upload(
        project=project, file=SimpleUploadedFile("notes.md", b"# Revenue\n\nGrew 4% in 2023.\n")
    )

    first = document_parse(document_id=document.pk)
    second = document_parse(document_id=document.pk)

    assert first.status == "parsed" and first.pages == 1
    assert second is None
