"""Self-service deletion: a document, a project, a run and an account go with every object made
from them, on the real S3 store (both buckets listed before and after) and in Postgres. Only
the owner can delete; a running run blocks deletion with a reason."""

import gzip
import io
import tarfile
import tempfile
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from core.s3 import s3_client
from corpora.indexing import load_index
from corpora.models import Document, Project
from corpora.services import (
    DeletionRefused,
    document_delete,
    document_parse,
    document_upload,
    project_create,
    project_delete,
)
from engine.publishing import PublishInfo, make_archive, publish_folder
from runs import artifacts
from runs.models import Checkpoint, Run, TrajectorySample
from runs.pipeline import project_index_build
from runs.presets import preset_config
from runs.services import RunRejected, run_delete
from waitlist.models import WaitlistEntry

pytestmark = pytest.mark.django_db

SECRET = "Zanzibar-7 merger terms were 41.7 dollars per share"
OTHER = "Quokka Industries revenue was 12 million dollars"


def bucket_contents() -> set[str]:
    """Every object in both buckets, as "bucket/key"."""
    client, found = s3_client(), set()
    for bucket in (settings.S3_UPLOADS_BUCKET, settings.S3_ARTIFACTS_BUCKET):
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                found.add(f"{bucket}/{item['Key']}")
    return found


def read(name: str) -> bytes:
    """An object's bytes; a tar.gz is read member by member."""
    bucket, key = name.split("/", 1)
    body = s3_client().get_object(Bucket=bucket, Key=key)["Body"].read()
    if key.endswith(".tar.gz"):
        with tarfile.open(fileobj=io.BytesIO(body), mode="r:gz") as tar:
            return b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
    if key.endswith(".gz"):
        return gzip.decompress(body)
    return body


def quoting(names, word: str) -> list[str]:
    """The objects whose content holds `word` (any case), archives opened."""
    return sorted(name for name in names if word.encode() in read(name).lower())


def parsed_document(project: Project, name: str, text: str) -> Document:
    document = document_upload(
        project=project, file=SimpleUploadedFile(name, f"{text} .\n\nMore words here.\n".encode())
    )
    return document_parse(document_id=document.pk)


def published_run(project: Project, name: str = "Quick run") -> Run:
    """A succeeded run as the pipeline leaves it: it searched the project's index build, has a
    checkpoint, a final model, prepared questions, a published folder and archive (with the
    index, hence the documents' text) and trajectories quoting what it found."""
    index_prefix = project_index_build(project_id=project.pk)
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name=name,
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.SUCCEEDED,
        index_prefix=index_prefix,
    )
    prefix = run.artifacts_prefix = f"projects/{project.pk}/runs/{run.pk}"
    run.questions_key = f"{prefix}/questions"
    run.save()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        model = folder / "model"
        model.mkdir()
        (model / "config.json").write_text("{}")
        (model / "model.safetensors").write_bytes(b"weights")
        artifacts.upload_folder(model, f"{prefix}/checkpoints/step-000002/model")
        artifacts.upload_folder(model, f"{prefix}/final")
        index_dir = load_index(index_prefix).save(folder / "index")
        info = PublishInfo(name=name, base_model="default", config=run.config)
        published = publish_folder(model, index_dir, info, folder / "quick-run")
        artifacts.upload_folder(published, f"{prefix}/published/quick-run")
        archive = make_archive(published, folder / "quick-run.tar.gz")
        s3_client().upload_file(str(archive), artifacts.bucket(), f"{prefix}/published/q.tar.gz")
    s3_client().put_object(
        Bucket=artifacts.bucket(), Key=f"{prefix}/questions/questions.jsonl", Body=b"{}\n"
    )
    Checkpoint.objects.create(
        run=run,
        step=2,
        s3_prefix=f"{prefix}/checkpoints/step-000002",
        is_final=True,
        published_prefix=f"{prefix}/published/quick-run",
        archive_key=f"{prefix}/published/q.tar.gz",
    )
    TrajectorySample.objects.create(run=run, step=2, question_id="q1", data={"text": SECRET})
    return run


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def test_deleting_a_document_leaves_nothing_of_its_text_on_s3(project):
    before = bucket_contents()
    secret = parsed_document(project, "zanzibar.txt", SECRET)
    parsed_document(project, "quokka.txt", OTHER)
    published_run(project)
    assert quoting(bucket_contents() - before, "zanzibar")  # the text is spread about

    document_delete(document=secret)

    left = bucket_contents() - before
    assert quoting(left, "zanzibar") == []
    assert not any(secret.s3_key in name or f"documents/{secret.pk}/" in name for name in left)
    assert not Document.objects.filter(pk=secret.pk).exists()


def test_deleting_a_document_keeps_the_other_documents(project):
    secret = parsed_document(project, "zanzibar.txt", SECRET)
    other = parsed_document(project, "quokka.txt", OTHER)

    document_delete(document=secret)

    left = bucket_contents()
    assert f"{settings.S3_UPLOADS_BUCKET}/{other.s3_key}" in left
    assert f"{settings.S3_ARTIFACTS_BUCKET}/{other.sections_key}" in left
    assert list(project.documents.all()) == [other]


def test_deleting_a_document_deletes_the_runs_that_searched_it_with_their_trajectories(project):
    secret = parsed_document(project, "zanzibar.txt", SECRET)
    run = published_run(project)

    deleted = document_delete(document=secret)

    assert deleted == ["Quick run"]
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not TrajectorySample.objects.filter(run_id=run.pk).exists()
    assert not any(f"/runs/{run.pk}/" in name for name in bucket_contents())


def test_a_run_that_never_searched_the_document_stays(project):
    parsed_document(project, "quokka.txt", OTHER)
    run = published_run(project)
    later = parsed_document(project, "zanzibar.txt", SECRET)  # uploaded after the run

    assert document_delete(document=later) == []

    assert Run.objects.filter(pk=run.pk).exists()
    assert artifacts.exists(run.checkpoints.get().archive_key)


def test_deleting_a_run_removes_its_checkpoints_archive_and_rows(project, alice):
    parsed_document(project, "zanzibar.txt", SECRET)
    before = bucket_contents()
    run = published_run(project)

    run_delete(run=run, user=alice)

    left = bucket_contents() - before
    assert [name for name in left if f"/runs/{run.pk}/" in name] == []
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not Checkpoint.objects.filter(run_id=run.pk).exists()


def test_deleting_a_project_leaves_nothing_under_it_in_either_bucket(project):
    before = bucket_contents()
    parsed_document(project, "zanzibar.txt", SECRET)
    published_run(project)

    project_delete(project=project)

    assert bucket_contents() - before == set()
    assert not Project.objects.filter(pk=project.pk).exists()


def test_a_project_ten_is_not_touched_by_deleting_project_one(alice):
    """Prefixes end with "/": deleting projects/1/ must not reach projects/10/."""
    first = project_create(owner=alice, name="First")
    key = f"projects/{first.pk}0/documents/x/keep.txt"
    s3_client().put_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key, Body=b"keep")

    project_delete(project=first)

    assert f"{settings.S3_UPLOADS_BUCKET}/{key}" in bucket_contents()
    s3_client().delete_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key)


@pytest.mark.parametrize("status", [Run.Status.QUEUED, Run.Status.TRAINING])
def test_an_active_run_is_refused_deletion_with_the_reason(project, alice, status):
    run = Run.objects.create(project=project, created_by=alice, name="Busy", status=status)

    with pytest.raises(RunRejected, match="Cancel it"):
        run_delete(run=run, user=alice)
    with pytest.raises(DeletionRefused, match="Busy"):
        project_delete(project=project)

    assert Run.objects.filter(pk=run.pk).exists()


def test_a_document_is_not_deleted_while_a_run_uses_the_project(project, alice):
    secret = parsed_document(project, "zanzibar.txt", SECRET)
    Run.objects.create(project=project, created_by=alice, name="Busy", status="training")

    with pytest.raises(DeletionRefused, match="Cancel them"):
        document_delete(document=secret)

    assert artifacts.exists(secret.sections_key)


def test_a_document_deleted_while_it_is_parsed_leaves_no_text(project):
    document = document_upload(
        project=project, file=SimpleUploadedFile("late.txt", f"{SECRET}\n".encode())
    )
    Document.objects.filter(pk=document.pk).delete()  # the parse has begun meanwhile

    assert document_parse(document_id=document.pk) is None
    assert not any(f"/documents/{document.pk}/" in n for n in bucket_contents())


def test_deleting_an_account_removes_its_projects_objects_and_waitlist_entry(
    client, alice, project
):
    WaitlistEntry.objects.create(email="alice@example.com", company="Alice Capital")
    before = bucket_contents()
    parsed_document(project, "zanzibar.txt", SECRET)
    published_run(project)
    client.force_login(alice)

    response = client.post("/accounts/delete/", {"password": "pw-alice-1"})

    assert response.status_code == 302
    assert bucket_contents() - before == set()
    assert not type(alice).objects.filter(pk=alice.pk).exists()
    assert not WaitlistEntry.objects.exists()
    assert client.get("/projects/").status_code == 302  # signed out


def test_deleting_an_account_asks_for_its_password(client, alice, project):
    client.force_login(alice)

    response = client.post("/accounts/delete/", {"password": "not-it"})

    assert response.status_code == 400
    assert "That is not your password." in response.content.decode()
    assert Project.objects.filter(pk=project.pk).exists()


def test_the_delete_pages_ask_first_and_delete_nothing_on_get(client, alice, project):
    document = parsed_document(project, "zanzibar.txt", SECRET)
    run = published_run(project)
    client.force_login(alice)

    pages = [
        client.get(f"/documents/{document.pk}/delete/"),
        client.get(f"/projects/{project.pk}/delete/"),
        client.get(f"/runs/{run.pk}/delete/"),
        client.get("/accounts/delete/"),
    ]

    assert [page.status_code for page in pages] == [200] * 4
    assert "Quick run" in pages[0].content.decode()  # the run that goes with the document
    assert all("cannot be undone" in page.content.decode() for page in pages)
    assert Document.objects.filter(pk=document.pk).exists() and Run.objects.exists()


@pytest.mark.parametrize("intruder", ["bob", "charlie"])
def test_another_customer_and_staff_get_404_on_every_delete_url(
    client, alice, project, intruder, request
):
    document = parsed_document(project, "zanzibar.txt", SECRET)
    run = Run.objects.create(project=project, created_by=alice, name="Done", status="succeeded")
    client.force_login(request.getfixturevalue(intruder))

    urls = [
        f"/documents/{document.pk}/delete/",
        f"/projects/{project.pk}/delete/",
        f"/runs/{run.pk}/delete/",
    ]
    statuses = [getattr(client, m)(url).status_code for url in urls for m in ("get", "post")]

    assert statuses == [404] * 6
    assert Document.objects.filter(pk=document.pk).exists() and Run.objects.filter(pk=run.pk)


def test_the_owner_deletes_a_run_through_its_page(client, alice, project):
    run = Run.objects.create(project=project, created_by=alice, name="Done", status="succeeded")
    client.force_login(alice)

    response = client.post(f"/runs/{run.pk}/delete/")

    assert response.status_code == 302 and response["Location"] == f"/projects/{project.pk}/"
    assert not Run.objects.filter(pk=run.pk).exists()


def test_a_running_run_page_says_why_it_cannot_be_deleted(client, alice, project):
    run = Run.objects.create(project=project, created_by=alice, name="Busy", status="training")
    client.force_login(alice)

    page = client.get(f"/runs/{run.pk}/delete/").content.decode()
    client.post(f"/runs/{run.pk}/delete/")

    assert "Busy is still training. Cancel it" in page
    assert Run.objects.filter(pk=run.pk).exists()
