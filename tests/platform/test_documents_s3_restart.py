"""The S3 store restarted during a document upload (issue 16): the upload that meets the
outage is refused with a reason the customer can act on and leaves nothing half-stored; the
same file uploads once the store is back. Real S3 (SeaweedFS) from the test stack."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from service_faults import ServiceFaults

from corpora.models import Document

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]
NOTES = b"# Outlook\n\nRevenue grew 4% in 2023 and capital expenditure was 12 million.\n"


def upload(client, project) -> tuple[int, dict]:
    response = client.post(
        f"/projects/{project.pk}/documents/upload/",
        {"files": SimpleUploadedFile("ACME_2023_notes.md", NOTES, content_type="text/markdown")},
        HTTP_ACCEPT="application/json",
    )
    return response.status_code, response.json()["files"][0]


def test_an_upload_during_an_s3_restart_is_refused_cleanly_and_goes_through_after(
    request, client_alice, project
):
    faults = ServiceFaults.for_session(request.config)
    before = set(Document.objects.values_list("pk", flat=True))

    with faults.stopped("s3"):
        status, answer = upload(client_alice, project)

    assert status >= 400 and not answer["ok"]
    assert "try again" in answer["error"].lower()
    assert set(Document.objects.values_list("pk", flat=True)) == before  # nothing half-stored

    status, answer = upload(client_alice, project)
    assert status == 200 and answer["ok"], answer
    assert Document.objects.get(pk=answer["id"]).name == "ACME_2023_notes.md"
