"""Document uploads: checked by content, size and quota, stored on S3, entity editable."""

import io
import zipfile
from pathlib import Path

import pytest
from botocore.exceptions import ClientError
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from core.s3 import s3_client
from corpora.models import Document
from corpora.services import project_create

pytestmark = pytest.mark.django_db

PDFS = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev" / "pdfs"
TINY_PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def upload(client, project, *files, json=True):
    headers = {"Accept": "application/json"} if json else {}
    return client.post(
        f"/projects/{project.pk}/documents/upload/", {"files": list(files)}, headers=headers
    )


def file(name, content):
    return SimpleUploadedFile(name, content)


def docx_bytes() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    return buffer.getvalue()


def stored(key: str) -> bytes:
    return s3_client().get_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)["Body"].read()


def test_an_uploaded_pdf_is_stored_on_s3_with_its_checksum_and_entity(client_alice, project):
    response = upload(client_alice, project, file("3M_2018_10K.pdf", TINY_PDF))

    assert response.json()["files"][0]["ok"]
    document = Document.objects.get()
    assert (document.kind, document.status, document.entity) == ("pdf", "uploaded", "3M")
    assert document.size == len(TINY_PDF) and len(document.sha256) == 64
    assert stored(document.s3_key) == TINY_PDF


@pytest.mark.skipif(not PDFS.is_dir(), reason="shared datasets are not beside the clone")
def test_many_real_filings_upload_in_one_post(client_alice, project):
    pdfs = sorted(PDFS.glob("*.pdf"))

    upload(client_alice, project, *(file(p.name, p.read_bytes()) for p in pdfs), json=False)

    assert Document.objects.filter(project=project, kind="pdf").count() == len(pdfs)
    assert set(Document.objects.values_list("entity", flat=True)) >= {"AMCOR", "BESTBUY", "3M"}


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("notes.docx", docx_bytes(), "docx"),
        ("page.html", b"<!DOCTYPE html><html><body>Revenue</body></html>", "html"),
        ("README.md", b"# Revenue\n\nGrew 4%.", "markdown"),
        ("notes.txt", "Revenue grew 4% in Q3 — résumé".encode(), "text"),
        ("pages.jsonl", b'{"doc": "x", "page": 1, "text": "Revenue"}\n', "pages_jsonl"),
        ("renamed.txt", TINY_PDF, "pdf"),
    ],
)
def test_the_type_comes_from_the_content_not_the_name(client_alice, project, name, content, kind):
    upload(client_alice, project, file(name, content))

    assert Document.objects.get().kind == kind


def test_a_binary_file_named_pdf_is_refused_in_plain_words(client_alice, project):
    response = upload(client_alice, project, file("report.pdf", b"MZ\x90\x00\x03\x00binary"))

    assert response.status_code == 400
    assert "is not a file type Sleuth reads" in response.json()["files"][0]["error"]
    assert not Document.objects.exists()


@override_settings(DOCUMENT_MAX_BYTES=100)
def test_a_file_over_the_size_limit_is_refused(client_alice, project):
    response = upload(client_alice, project, file("big.txt", b"x" * 101))

    assert "the limit is 100" in response.json()["files"][0]["error"]
    assert not Document.objects.exists()


@override_settings(ACCOUNT_QUOTA_BYTES=150)
def test_the_account_quota_counts_every_project(client_alice, project, alice):
    other = project_create(owner=alice, name="Other")
    upload(client_alice, other, file("a.txt", b"a" * 100))

    response = upload(client_alice, project, file("b.txt", b"b" * 100))

    assert "quota" in response.json()["files"][0]["error"]
    assert Document.objects.count() == 1


def test_the_same_file_twice_in_a_project_is_refused(client_alice, project):
    upload(client_alice, project, file("a.txt", b"same"))

    response = upload(client_alice, project, file("b.txt", b"same"))

    assert "already in this project (as a.txt)" in response.json()["files"][0]["error"]


def test_one_bad_file_does_not_stop_the_others(client_alice, project):
    response = upload(
        client_alice, project, file("good.txt", b"fine"), file("bad.bin", b"\x00\x01"), json=False
    )

    assert response.status_code == 302
    assert list(Document.objects.values_list("name", flat=True)) == ["good.txt"]


def test_the_entity_can_be_edited(client_alice, project):
    upload(client_alice, project, file("AMCOR_2023Q4_EARNINGS.txt", b"Amcor results"))
    document = Document.objects.get()

    response = client_alice.post(
        f"/documents/{document.pk}/entity/", {"entity": "Amcor plc"}, headers={"HX-Request": "true"}
    )

    assert "Amcor plc" in response.content.decode()
    document.refresh_from_db()
    assert document.entity == "Amcor plc"


def test_deleting_a_document_removes_its_file(
    client_alice, project, django_capture_on_commit_callbacks
):
    upload(client_alice, project, file("a.txt", b"to delete"))
    document = Document.objects.get()

    with django_capture_on_commit_callbacks(execute=True):
        client_alice.post(f"/documents/{document.pk}/delete/")

    assert not Document.objects.exists()
    with pytest.raises(ClientError):
        stored(document.s3_key)


@pytest.mark.parametrize("name", ["$$$", "@#%", "¿¡"])
def test_a_name_with_no_safe_character_is_stored_as_file(client_alice, project, name):
    response = upload(client_alice, project, file(name, b"plain words in a text file"))

    assert response.status_code == 200, response.content
    document = Document.objects.get()
    assert document.name == name and document.s3_key.endswith("/file")
    assert stored(document.s3_key) == b"plain words in a text file"
