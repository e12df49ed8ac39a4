"""Sleuth's own REST API at /v1 (serving.rest): projects, their documents and question sets, a
run's metric rows and a checkpoint's download, with a personal API token on the real
services (Postgres, S3). Each list pages like OpenAI's (`after`, `limit`, `has_more`); another
customer's ids are a 404, a request without a token a 401, both in OpenAI's error shape."""

import urllib.request
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from core.s3 import s3_client
from corpora.models import Document, Project, Question, QuestionSet
from corpora.services import project_create, question_set_add_question
from runs.models import Checkpoint, Run, RunMetric
from serving.services import api_token_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(client):
    """api(user) -> a request function sending `user`'s token: api(user)("get", url, ...)."""

    def make(user):
        _, raw = api_token_create(user=user, name="tests")

        def call(method: str, url: str, data=None, **extra):
            if method == "post":
                extra.setdefault("content_type", "application/json")
            return getattr(client, method)(url, data, HTTP_AUTHORIZATION=f"Bearer {raw}", **extra)

        return call

    return make


def document(project: Project, name: str, **fields) -> Document:
    return Document.objects.create(
        project=project,
        name=name,
        kind="pdf",
        content_type="application/pdf",
        size=3,
        sha256=name.encode().hex().ljust(64, "0")[:64],
        s3_key=f"projects/{project.pk}/documents/{name}",
        **fields,
    )


def question_set(project: Project, name: str, key_tail: str, questions=(), **fields):
    made = QuestionSet.objects.create(
        project=project,
        name=name,
        s3_key=f"projects/{project.pk}/question-sets/{key_tail}",
        size=10,
        **fields,
    )
    for position, (entity, evidence) in enumerate(questions, start=1):
        Question.objects.create(
            question_set=made,
            position=position,
            question=f"Q{position}?",
            answer="A",
            entity=entity,
            evidence=evidence,
        )
    return made


def make_run(project: Project, status=Run.Status.SUCCEEDED) -> Run:
    return Run.objects.create(
        project=project, created_by=project.owner, name="First try", status=status
    )


def checkpoint(run: Run, step: int, archive: bool = True, **fields) -> Checkpoint:
    key = f"projects/{run.project_id}/runs/{run.pk}/published/step-{step}.tar.gz"
    if archive:
        s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key, Body=b"weights")
    return Checkpoint.objects.create(
        run=run,
        step=step,
        s3_prefix=key.removesuffix(".tar.gz"),
        archive_key=key if archive else "",
        size_bytes=7,
        **fields,
    )


def error(response) -> dict:
    return response.json()["error"]


# --- projects ------------------------------------------------------------------------------


def test_a_project_is_created_listed_and_retrieved(api, alice):
    call = api(alice)

    created = call("post", "/v1/projects", {"name": "  10-K filings "})

    assert created.status_code == 200, created.content
    body = created.json()
    project = Project.objects.get()
    assert body["id"] == str(project.pk) and body["object"] == "project"
    assert body["name"] == "10-K filings" and project.owner == alice
    assert body["document_count"] == 0 and body["question_set_count"] == 0
    assert body["searchable"] is False and body["created_at"] > 0
    document(project, "a.pdf")
    retrieved = call("get", f"/v1/projects/{project.pk}").json()
    assert retrieved["document_count"] == 1 and retrieved["name"] == "10-K filings"
    listed = call("get", "/v1/projects").json()
    assert listed["object"] == "list" and [p["id"] for p in listed["data"]] == [body["id"]]
    assert listed["has_more"] is False
    assert listed["first_id"] == listed["last_id"] == body["id"]


@pytest.mark.parametrize("name", ["", "   ", "x" * 121])
def test_a_project_needs_a_name_the_website_would_take(api, alice, name):
    response = api(alice)("post", "/v1/projects", {"name": name})

    assert response.status_code == 400
    assert error(response)["param"] == "name" and not Project.objects.exists()


def test_a_project_without_a_name_field_is_400(api, alice):
    response = api(alice)("post", "/v1/projects", {})

    assert response.status_code == 400 and "name" in error(response)["message"]


def test_projects_page_newest_first_with_after_and_limit(api, alice):
    now = timezone.now()
    made = [project_create(owner=alice, name=f"P{i}") for i in range(5)]
    for i, project in enumerate(made):  # P4 newest
        Project.objects.filter(pk=project.pk).update(created_at=now + timedelta(seconds=i))
    call = api(alice)

    first = call("get", "/v1/projects?limit=2").json()
    second = call("get", f"/v1/projects?limit=2&after={first['last_id']}").json()
    third = call("get", f"/v1/projects?limit=2&after={second['last_id']}").json()

    names = [[p["name"] for p in page["data"]] for page in (first, second, third)]
    assert names == [["P4", "P3"], ["P2", "P1"], ["P0"]]
    assert [page["has_more"] for page in (first, second, third)] == [True, True, False]
    assert first["first_id"] == str(made[4].pk) and first["last_id"] == str(made[3].pk)
    assert third["first_id"] == third["last_id"] == str(made[0].pk)


def test_projects_with_the_same_creation_time_page_without_loss(api, alice):
    moment = timezone.now()
    made = [project_create(owner=alice, name=f"P{i}") for i in range(3)]
    Project.objects.filter(owner=alice).update(created_at=moment)
    call = api(alice)

    first = call("get", "/v1/projects?limit=2").json()
    rest = call("get", f"/v1/projects?limit=2&after={first['last_id']}").json()

    ids = [p["id"] for p in first["data"] + rest["data"]]
    assert sorted(ids) == sorted(str(p.pk) for p in made) and len(set(ids)) == 3


@pytest.mark.parametrize("query", ["limit=0", "limit=101", "limit=many"])
def test_a_limit_out_of_range_is_400(api, alice, query):
    response = api(alice)("get", f"/v1/projects?{query}")

    assert response.status_code == 400 and error(response)["type"] == "invalid_request_error"


def test_an_unknown_after_is_404(api, alice):
    project_create(owner=alice, name="P")

    response = api(alice)("get", "/v1/projects?after=999999")

    assert response.status_code == 404 and error(response)["code"] == "project_not_found"


def test_deleting_a_project_removes_it_and_its_objects(api, alice):
    project = project_create(owner=alice, name="Doomed")
    document(project, "a.pdf")
    key = f"projects/{project.pk}/documents/a.pdf"
    s3_client().put_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=key, Body=b"pdf")
    call = api(alice)

    response = call("delete", f"/v1/projects/{project.pk}")

    assert response.status_code == 200, response.content
    assert response.json() == {"id": str(project.pk), "object": "project.deleted", "deleted": True}
    assert not Project.objects.filter(pk=project.pk).exists()
    listed = s3_client().list_objects_v2(Bucket=settings.S3_UPLOADS_BUCKET, Prefix=key)
    assert not listed.get("Contents")
    assert call("get", f"/v1/projects/{project.pk}").status_code == 404


def test_a_project_with_an_active_run_is_not_deleted(api, alice):
    project = project_create(owner=alice, name="Busy")
    make_run(project, status=Run.Status.TRAINING)

    response = api(alice)("delete", f"/v1/projects/{project.pk}")

    assert response.status_code == 409 and error(response)["code"] == "project_busy"
    assert "Cancel" in error(response)["message"]
    assert Project.objects.filter(pk=project.pk).exists()


# --- documents ----------------------------------------------------------------------------


def test_a_projects_documents_are_listed_with_what_the_platform_read(api, alice):
    project = project_create(owner=alice, name="Filings")
    read = document(
        project, "3M_2018_10K.pdf", status=Document.Status.INDEXED, pages=112, entity="3M"
    )
    failed = document(project, "broken.pdf", status=Document.Status.FAILED, error="Unreadable.")
    Document.objects.filter(pk=failed.pk).update(created_at=timezone.now() + timedelta(seconds=1))
    document(project_create(owner=alice, name="Other"), "elsewhere.pdf")
    call = api(alice)

    listed = call("get", f"/v1/projects/{project.pk}/documents").json()

    assert [d["filename"] for d in listed["data"]] == ["broken.pdf", "3M_2018_10K.pdf"]
    first = listed["data"][1]
    assert first["id"] == str(read.pk) and first["object"] == "document"
    assert first["file_id"] == f"file-doc-{read.pk}" and first["project"] == str(project.pk)
    assert first["status"] == "indexed" and first["pages"] == 112 and first["entity"] == "3M"
    assert first["error"] is None and first["bytes"] == 3 and first["kind"] == "pdf"
    assert listed["data"][0]["status"] == "failed"
    assert listed["data"][0]["error"] == "Unreadable." and listed["data"][0]["entity"] is None
    retrieved = call("get", f"/v1/projects/{project.pk}/documents/{read.pk}").json()
    assert retrieved == first
    by_file_id = call("get", f"/v1/projects/{project.pk}/documents/file-doc-{read.pk}")
    assert by_file_id.json() == first


def test_documents_page_with_after_and_limit(api, alice):
    project = project_create(owner=alice, name="Filings")
    now = timezone.now()
    made = [document(project, f"d{i}.pdf") for i in range(3)]
    for i, doc in enumerate(made):
        Document.objects.filter(pk=doc.pk).update(created_at=now + timedelta(seconds=i))
    url = f"/v1/projects/{project.pk}/documents"
    call = api(alice)

    first = call("get", f"{url}?limit=2").json()
    rest = call("get", f"{url}?limit=2&after={first['last_id']}").json()

    assert [d["filename"] for d in first["data"]] == ["d2.pdf", "d1.pdf"] and first["has_more"]
    assert [d["filename"] for d in rest["data"]] == ["d0.pdf"] and not rest["has_more"]


def test_a_document_is_found_only_under_its_own_project(api, alice):
    project = project_create(owner=alice, name="Filings")
    other = project_create(owner=alice, name="Other")
    elsewhere = document(other, "elsewhere.pdf")

    response = api(alice)("get", f"/v1/projects/{project.pk}/documents/{elsewhere.pk}")

    assert response.status_code == 404 and error(response)["code"] == "document_not_found"


# --- question sets ------------------------------------------------------------------------


def test_question_sets_are_listed_with_their_counts_and_source(api, alice):
    project = project_create(owner=alice, name="Filings")
    evidence = [{"text": "Revenue was 7.", "doc": "acme.pdf", "page": 3}]
    uploaded = question_set(
        project,
        "qa.jsonl",
        "abc/qa.jsonl",
        questions=[("ACME", evidence), ("ACME", []), ("Globex", evidence), ("", [])],
        echo_recall={"k": 10, "recall": 0.25, "questions": 4},
    )
    generated = question_set(
        project,
        "Generated",
        "generated-abc.jsonl",
        questions=[("ACME", evidence)],
        generated_by="offline",
        needs_review=True,
    )
    question_set_add_question(
        project=project, set_name="From the playground", question="Revenue?", answer="7"
    )
    playground = QuestionSet.objects.get(name="From the playground")
    now = timezone.now()
    for i, made in enumerate([uploaded, generated, playground]):
        QuestionSet.objects.filter(pk=made.pk).update(created_at=now + timedelta(seconds=i))
    call = api(alice)

    listed = call("get", f"/v1/projects/{project.pk}/question_sets").json()

    assert [s["id"] for s in listed["data"]] == [
        str(playground.pk),
        str(generated.pk),
        str(uploaded.pk),
    ]
    by_id = {s["id"]: s for s in listed["data"]}
    first = by_id[str(uploaded.pk)]
    assert first["object"] == "question_set" and first["file_id"] == f"file-{uploaded.pk}"
    assert first["source"] == "uploaded" and first["needs_review"] is False
    assert first["question_count"] == 4 and first["with_evidence_count"] == 2
    assert first["entity_count"] == 2 and first["echo_recall"] == {"k": 10, "recall": 0.25}
    draft = by_id[str(generated.pk)]
    assert draft["source"] == "generated" and draft["needs_review"] is True
    assert draft["question_count"] == 1 and draft["echo_recall"] is None
    rated = by_id[str(playground.pk)]
    assert rated["source"] == "playground" and rated["question_count"] == 1
    assert rated["with_evidence_count"] == 0 and rated["entity_count"] == 0
    url = f"/v1/projects/{project.pk}/question_sets"
    assert call("get", f"{url}/{uploaded.pk}").json() == first
    assert call("get", f"{url}/file-{uploaded.pk}").json() == first
    page = call("get", f"{url}?limit=1&after={playground.pk}").json()
    assert [s["id"] for s in page["data"]] == [str(generated.pk)] and page["has_more"]


def test_an_empty_question_set_counts_nothing(api, alice):
    project = project_create(owner=alice, name="Filings")
    empty = question_set(project, "empty.jsonl", "abc/empty.jsonl")

    got = api(alice)("get", f"/v1/projects/{project.pk}/question_sets/{empty.pk}").json()

    assert got["question_count"] == got["with_evidence_count"] == got["entity_count"] == 0


# --- run metrics --------------------------------------------------------------------------


def test_a_runs_metric_rows_since_a_step(api, alice):
    run = make_run(project_create(owner=alice, name="Filings"), status=Run.Status.TRAINING)
    for step in range(1, 6):
        RunMetric.objects.create(
            run=run, step=step, data={"step": step, "reward/total": step / 10, "note": "x"}
        )
    call = api(alice)

    since = call("get", f"/v1/runs/{run.pk}/metrics?since=2").json()

    assert since["object"] == "list" and since["active"] is True
    assert [row["step"] for row in since["data"]] == [3, 4, 5]
    row = since["data"][0]
    assert row == {
        "id": "step-3",
        "object": "run.metric",
        "step": 3,
        "created_at": row["created_at"],
        "metrics": {"reward/total": 0.3, "note": "x"},
    }
    assert since["first_id"] == "step-3" and since["last_id"] == "step-5"
    assert not since["has_more"]
    whole = call("get", f"/v1/runs/ftjob-{run.pk}/metrics").json()
    assert [row["step"] for row in whole["data"]] == [1, 2, 3, 4, 5]


def test_metric_rows_page_with_after_and_limit(api, alice):
    run = make_run(project_create(owner=alice, name="Filings"))
    for step in range(1, 6):
        RunMetric.objects.create(run=run, step=step, data={"step": step, "loss": 1.0})
    url = f"/v1/runs/{run.pk}/metrics"
    call = api(alice)

    first = call("get", f"{url}?limit=2").json()
    second = call("get", f"{url}?limit=2&after={first['last_id']}").json()
    last = call("get", f"{url}?limit=2&after={second['last_id']}").json()

    steps = [[row["step"] for row in page["data"]] for page in (first, second, last)]
    assert steps == [[1, 2], [3, 4], [5]]
    assert [page["has_more"] for page in (first, second, last)] == [True, True, False]
    assert first["active"] is False  # a succeeded run logs no more
    assert call("get", f"{url}?limit=1001").status_code == 400
    assert call("get", f"{url}?limit=1000").status_code == 200


@pytest.mark.parametrize("since", ["-1", "two"])
def test_a_since_that_is_no_step_is_400(api, alice, since):
    run = make_run(project_create(owner=alice, name="Filings"))

    response = api(alice)("get", f"/v1/runs/{run.pk}/metrics?since={since}")

    assert response.status_code == 400 and error(response)["type"] == "invalid_request_error"


# --- checkpoint downloads -----------------------------------------------------------------


def test_a_checkpoint_downloads_through_a_presigned_url(api, alice):
    run = make_run(project_create(owner=alice, name="Filings"))
    final = checkpoint(run, 2, is_final=True)
    call = api(alice)

    response = call("get", f"/v1/runs/{run.pk}/checkpoints/{final.pk}/download")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["object"] == "checkpoint.download" and body["id"] == str(final.pk)
    assert body["fine_tuning_checkpoint_id"] == f"ftckpt-{final.pk}"
    assert body["fine_tuning_job_id"] == f"ftjob-{run.pk}"
    assert body["filename"] == "step-2.tar.gz" and body["step_number"] == 2
    assert body["expires_at"] > timezone.now().timestamp()
    assert "X-Amz-Expires=" in body["url"]
    with urllib.request.urlopen(body["url"]) as download:
        assert download.read() == b"weights"
        assert "step-2.tar.gz" in download.headers["Content-Disposition"]
    by_job_ids = call("get", f"/v1/runs/ftjob-{run.pk}/checkpoints/ftckpt-{final.pk}/download")
    assert by_job_ids.status_code == 200


def test_a_checkpoint_without_an_archive_says_why(api, alice):
    run = make_run(project_create(owner=alice, name="Filings"), status=Run.Status.PUBLISHING)
    intermediate = checkpoint(run, 1, archive=False)
    packing = checkpoint(run, 2, archive=False, is_final=True)
    call = api(alice)

    not_packed = call("get", f"/v1/runs/{run.pk}/checkpoints/{intermediate.pk}/download")
    still_packing = call("get", f"/v1/runs/{run.pk}/checkpoints/{packing.pk}/download")

    assert not_packed.status_code == 404 and "final checkpoint" in error(not_packed)["message"]
    assert still_packing.status_code == 409 and "being packed" in error(still_packing)["message"]


def test_an_archive_key_outside_its_own_run_is_never_presigned(api, alice, bob):
    run = make_run(project_create(owner=alice, name="Filings"))
    others = project_create(owner=bob, name="Bob's")
    stray = Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix="p",
        archive_key=f"projects/{others.pk}/runs/1/published/bob.tar.gz",
    )

    response = api(alice)("get", f"/v1/runs/{run.pk}/checkpoints/{stray.pk}/download")

    assert response.status_code == 404 and "url" not in response.json()


def test_a_checkpoint_is_found_only_under_its_own_run(api, alice):
    project = project_create(owner=alice, name="Filings")
    run, other = make_run(project), make_run(project)
    theirs = checkpoint(other, 1)

    response = api(alice)("get", f"/v1/runs/{run.pk}/checkpoints/{theirs.pk}/download")

    assert response.status_code == 404 and error(response)["code"] == "checkpoint_not_found"


# --- who sees what ------------------------------------------------------------------------


@pytest.fixture
def alices(alice):
    """alice's project with one of each thing, by the URLs that reach them."""
    project = project_create(owner=alice, name="Alice's filings")
    doc = document(project, "a.pdf", entity="ACME")
    questions = question_set(project, "qa.jsonl", "abc/qa.jsonl", questions=[("ACME", [])])
    run = make_run(project)
    RunMetric.objects.create(run=run, step=1, data={"step": 1, "loss": 1.0})
    final = checkpoint(run, 1, is_final=True)
    p = f"/v1/projects/{project.pk}"
    return [
        p,
        f"{p}/documents",
        f"{p}/documents/{doc.pk}",
        f"{p}/question_sets",
        f"{p}/question_sets/{questions.pk}",
        f"/v1/runs/{run.pk}/metrics",
        f"/v1/runs/{run.pk}/checkpoints/{final.pk}/download",
    ]


def test_another_customers_token_gets_404_for_each_of_alices_ids(api, alice, bob, alices):
    as_alice, as_bob = api(alice), api(bob)

    answers = {url: as_bob("get", url).status_code for url in alices}

    assert answers == dict.fromkeys(alices, 404)
    assert all(as_alice("get", url).status_code == 200 for url in alices)
    assert as_bob("delete", alices[0]).status_code == 404
    assert Project.objects.filter(owner=alice).exists()
    assert as_bob("get", "/v1/projects").json()["data"] == []
    refused = as_bob("get", f"/v1/projects?after={alices[0].rsplit('/', 1)[-1]}")
    assert refused.status_code == 404
    assert error(as_bob("get", alices[0]))["message"].startswith("No such project")


def test_without_a_token_every_endpoint_is_401(client, alices):
    for url in ["/v1/projects", *alices]:
        response = client.get(url)
        assert response.status_code == 401, url
        assert error(response)["code"] == "invalid_api_key"
    assert client.post("/v1/projects", {"name": "x"}).status_code == 401
    assert client.delete(alices[0]).status_code == 401
    assert Project.objects.count() == 1


def test_a_session_without_a_token_is_401(client, alice, alices):
    client.force_login(alice)

    assert client.get("/v1/projects").status_code == 401
    assert client.delete(alices[0]).status_code == 401


def test_the_openapi_schema_lists_the_sleuth_endpoints(client):
    schema = client.get("/v1/openapi.json").json()

    paths = schema["paths"]
    assert set(paths["/v1/projects"]) == {"get", "post"}
    assert set(paths["/v1/projects/{project_id}"]) == {"get", "delete"}
    for path in [
        "/v1/projects/{project_id}/documents",
        "/v1/projects/{project_id}/documents/{document_id}",
        "/v1/projects/{project_id}/question_sets",
        "/v1/projects/{project_id}/question_sets/{question_set_id}",
        "/v1/runs/{run_id}/metrics",
        "/v1/runs/{run_id}/checkpoints/{checkpoint_id}/download",
    ]:
        assert set(paths[path]) == {"get"}, path
    assert "/v1/fine_tuning/jobs" in paths  # beside OpenAI's
