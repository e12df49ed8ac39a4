"""Search before training (issue 15): documents are indexed as soon as they are parsed, a
project's search page shows the chunks the agent would see for a query, and beside it the
echo recall of the project's question sets. On the real services (Postgres, S3, Redis, and a
Celery worker where a test says so)."""

import json
import time
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile

from core.s3 import s3_client
from corpora import indexing
from corpora.models import Document, Project, QuestionSet
from corpora.selectors import documents_in_progress
from corpora.services import (
    document_delete,
    document_parse,
    document_set_entity,
    document_upload,
    project_create,
    question_set_import,
)
from engine.search import index as search_index
from runs.models import Run
from runs.pipeline import StageFailed
from runs.pipeline import project_index_build as run_index_build
from runs.presets import preset_config
from tests.helpers.documents import pages_file, parsed

ZANZIBAR = [
    "Zanzibar Shipping cover page. Annual report for fiscal 2023.",
    "Purchases of property, plant and equipment were 41.7 million dollars in 2023.",
    "Dividends <script>alert(1)</script> of 2 dollars per share were paid to holders.",
]
QUOKKA = [
    "Quokka Industries annual report for fiscal 2023.",
    "Quokka revenue was 12 million dollars; purchases of property were 3 million dollars.",
]


def builds(project: Project) -> set[str]:
    """The index builds on S3 that hold a manifest."""
    listing = s3_client().list_objects_v2(
        Bucket=settings.S3_ARTIFACTS_BUCKET, Prefix=f"projects/{project.pk}/index/"
    )
    return {
        item["Key"].removesuffix("/manifest.json")
        for item in listing.get("Contents", [])
        if item["Key"].endswith("/manifest.json")
    }


@pytest.fixture
def sent(monkeypatch):
    """Tasks the web side queues, recorded instead of sent: [(name, args)]."""
    from config.celery import app

    calls = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, **kw: calls.append((name, args)))
    return calls


@pytest.fixture
def filings(alice):
    """alice's project with two parsed filings, indexed."""
    project = project_create(owner=alice, name="Filings")
    parsed(project, "ZANZIBAR_2023_10K", "Zanzibar", ZANZIBAR)
    parsed(project, "QUOKKA_2023_10K", "Quokka", QUOKKA)
    indexing.project_index_build(project_id=project.pk)
    project.refresh_from_db()
    return project


def search(client, project, query: str):
    return client.get(f"/projects/{project.pk}/search/", {"q": query})


# -- indexed as soon as parsed --------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_parsed_documents_are_indexed_without_a_run_one_build_per_burst(celery_worker, alice):
    project = project_create(owner=alice, name="Burst")
    for n in range(4):
        text = [f"Company{n} annual report.", f"Company{n} revenue was {n + 1} million dollars."]
        document_upload(project=project, file=pages_file(f"COMPANY{n}_2023_10K", f"C{n}", text))

    deadline = time.monotonic() + 180
    while True:
        project.refresh_from_db()
        statuses = set(project.documents.values_list("status", flat=True))
        if statuses == {"indexed"} and project.index_prefix == indexing.current_index_prefix(
            project
        ):
            break
        assert time.monotonic() < deadline, f"not indexed: {statuses} {project.index_prefix!r}"
        time.sleep(0.25)

    assert not Run.objects.filter(project=project).exists()
    assert project.index_prefix in builds(project)
    # Coalesced: not one build per uploaded file. How many fewer depends on how the parses
    # and builds interleave (one or two on an idle machine, three seen under load).
    assert len(builds(project)) < 4
    index = indexing.load_index(project.index_prefix)
    assert {c.doc for c in index.chunks} == {f"COMPANY{n}_2023_10K.jsonl" for n in range(4)}


@pytest.mark.django_db
def test_a_parse_queues_one_index_build_while_one_waits(
    alice, sent, django_capture_on_commit_callbacks
):
    project = project_create(owner=alice, name="Queued")
    with django_capture_on_commit_callbacks(execute=True):
        first = document_upload(project=project, file=pages_file("A_2023", "A", ["alpha text"]))
        second = document_upload(project=project, file=pages_file("B_2023", "B", ["beta text"]))
    sent.clear()  # the parses

    with django_capture_on_commit_callbacks(execute=True):
        document_parse(document_id=first.pk)
        document_parse(document_id=second.pk)

    assert sent == [("config.tasks.project_index", [project.pk])]
    indexing.project_index_refresh(project_id=project.pk)  # the task, as a worker runs it
    project.refresh_from_db()
    assert project.index_prefix == indexing.current_index_prefix(project)
    assert set(project.documents.values_list("status", flat=True)) == {"indexed"}
    with django_capture_on_commit_callbacks(execute=True):  # the build began: a change queues
        document_set_entity(document=Document.objects.get(pk=first.pk), entity="Alpha")
    assert sent[-1] == ("config.tasks.project_index", [project.pk])


@pytest.mark.django_db
def test_the_document_table_polls_until_parsed_documents_are_indexed(alice):
    project = project_create(owner=alice, name="Polling")
    document = parsed(project, "A_2023", "A", ["alpha text"])
    assert document.status == "parsed"
    assert documents_in_progress(project=project)  # parsed a moment ago, waiting for its index

    indexing.project_index_build(project_id=project.pk)

    assert not documents_in_progress(project=project)


@pytest.mark.django_db
def test_a_run_without_readable_documents_still_fails_with_the_reason(alice):
    project = project_create(owner=alice, name="Empty")

    with pytest.raises(StageFailed, match="No readable documents"):
        run_index_build(project_id=project.pk)


@pytest.mark.django_db
def test_a_document_deleted_during_its_build_takes_the_build_with_it(alice, monkeypatch):
    project = project_create(owner=alice, name="Race")
    parsed(project, "A_2023", "A", ["alpha text"])
    gone = parsed(project, "B_2023", "B", ["secret beta text"])
    from engine.search import store

    upload = store.upload_index

    def upload_then_delete(*args, **kwargs):
        manifest = upload(*args, **kwargs)
        Document.objects.filter(pk=gone.pk).delete()  # deleted while the build was uploaded
        return manifest

    monkeypatch.setattr(store, "upload_index", upload_then_delete)

    with pytest.raises(indexing.DocumentsChanged):
        indexing.project_index_build(project_id=project.pk)

    assert builds(project) == set()
    project.refresh_from_db()
    assert project.index_prefix == ""


@pytest.mark.django_db
def test_deleting_a_document_drops_the_current_index_and_queues_a_new_one(
    filings, sent, django_capture_on_commit_callbacks
):
    old = filings.index_prefix
    with django_capture_on_commit_callbacks(execute=True):
        document_delete(document=filings.documents.get(name="QUOKKA_2023_10K.jsonl"))

    filings.refresh_from_db()
    assert (filings.index_prefix, old in builds(filings)) == ("", False)
    assert sent == [("config.tasks.project_index", [filings.pk])]
    indexing.project_index_refresh(project_id=filings.pk)
    filings.refresh_from_db()
    index = indexing.load_index(filings.index_prefix)
    assert {c.doc for c in index.chunks} == {"ZANZIBAR_2023_10K.jsonl"}


@pytest.mark.django_db
def test_old_builds_nobody_uses_are_pruned(filings, alice, monkeypatch, sent):
    searched = filings.index_prefix
    Run.objects.create(
        project=filings,
        created_by=alice,
        name="Old run",
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.SUCCEEDED,
        index_prefix=searched,
    )
    document_set_entity(document=filings.documents.get(name="QUOKKA_2023_10K.jsonl"), entity="Q")
    unused = indexing.project_index_refresh(project_id=filings.pk)
    document_set_entity(document=filings.documents.get(name="QUOKKA_2023_10K.jsonl"), entity="QI")
    assert builds(filings) == {searched, unused}

    settings.SLEUTH_INDEX_STALE_BUILD_SECONDS = 0
    current = indexing.project_index_refresh(project_id=filings.pk)

    assert builds(filings) == {searched, current}  # the run's and the current one stay


# -- the search page --------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_search_page_shows_the_top_chunks_with_document_page_and_text(filings, client_alice):
    response = search(client_alice, filings, "purchases of property plant and equipment")

    html = response.content.decode()
    assert response.status_code == 200
    results = html.split('id="results"')[1]
    assert results.count('class="trajectory"') <= 5
    first = results.split('class="trajectory"')[1]
    assert "ZANZIBAR_2023_10K.jsonl" in first and "41.7 million" in first
    document = filings.documents.get(name="ZANZIBAR_2023_10K.jsonl")
    assert f'href="/documents/{document.pk}/pages/2/">page 2</a>' in first
    assert "[3M 2018] capital expenditure" in html  # the scope syntax, explained
    assert (
        f'href="/projects/{filings.pk}/search/"'
        in client_alice.get(f"/projects/{filings.pk}/").content.decode()
    )


@pytest.mark.django_db
def test_results_are_escaped_and_the_scope_limits_the_documents(filings, client_alice):
    html = search(client_alice, filings, "dividends paid to holders alert").content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html

    scoped = search(client_alice, filings, "[quokka] purchases of property").content.decode()
    results = scoped.split('id="results"')[1]
    assert "QUOKKA_2023_10K.jsonl" in results and "ZANZIBAR_2023_10K.jsonl" not in results
    assert search(client_alice, filings, "").content.decode().count('class="trajectory"') == 0


@pytest.mark.django_db
def test_the_page_text_of_a_result(filings, client_alice):
    document = filings.documents.get(name="ZANZIBAR_2023_10K.jsonl")

    page = client_alice.get(f"/documents/{document.pk}/pages/2/")
    missing = client_alice.get(f"/documents/{document.pk}/pages/9/")

    assert page.status_code == 200
    assert "Purchases of property, plant and equipment were 41.7" in page.content.decode()
    assert "Zanzibar Shipping cover page" not in page.content.decode()  # page 1 stays out
    assert missing.status_code == 404
    assert "has no page 9" in missing.content.decode()


@pytest.mark.django_db
def test_another_customer_gets_404(filings, client, bob):
    client.force_login(bob)
    document = filings.documents.first()

    assert search(client, filings, "revenue").status_code == 404
    assert client.get(f"/documents/{document.pk}/pages/1/").status_code == 404


@pytest.mark.django_db
def test_a_long_query_is_refused(filings, client_alice):
    refused = search(client_alice, filings, "revenue " * 40)  # 320 characters
    taken = search(client_alice, filings, ("revenue " * 40)[:300])

    assert refused.status_code == 400
    assert 'id="results"' not in refused.content.decode()
    assert "at most 300 characters" in refused.content.decode()
    assert taken.status_code == 200 and 'id="results"' in taken.content.decode()


@pytest.mark.django_db
def test_empty_states_say_what_to_do(alice, client_alice, sent, django_capture_on_commit_callbacks):
    project = project_create(owner=alice, name="Empty")
    assert "upload documents first" in search(client_alice, project, "x").content.decode()

    uploaded = document_upload(project=project, file=pages_file("A_2023", "A", ["alpha text"]))
    assert (
        "Indexing 1 document… refresh in a moment"
        in search(client_alice, project, "alpha").content.decode()
    )

    document_parse(document_id=uploaded.pk)  # parsed, but its build is lost: the page asks
    sent.clear()
    with django_capture_on_commit_callbacks(execute=True):
        html = search(client_alice, project, "alpha").content.decode()
    assert "Indexing 1 document… refresh in a moment" in html
    assert sent == [("config.tasks.project_index", [project.pk])]

    indexing.project_index_refresh(project_id=project.pk)
    html = search(client_alice, project, "alpha").content.decode()
    assert 'id="results"' in html and "alpha text" in html
    assert "Import a question set with evidence" in html


# -- echo recall ------------------------------------------------------------------------------


def question_file(rows: list[dict]) -> SimpleUploadedFile:
    body = "\n".join(json.dumps(row) for row in rows) + "\n"
    return SimpleUploadedFile("qa.jsonl", body.encode())


@pytest.mark.django_db
def test_echo_recall_is_measured_stored_and_shown(
    filings, client_alice, sent, django_capture_on_commit_callbacks
):
    rows = [
        {
            "question": "What were Zanzibar purchases of property, plant and equipment in 2023?",
            "answer": "41.7 million",
            "evidence": [
                {
                    "text": "Purchases of property, plant and equipment were 41.7 million",
                    "doc": "ZANZIBAR_2023_10K",
                    "page": 2,
                }
            ],
        },
        {
            "question": "What was Quokka revenue?",
            "answer": "12 million",
            "evidence": [
                {"text": "Quokka revenue was 12 million dollars", "doc": "QUOKKA_2023_10K"}
            ],
        },
        {"question": "Who audits Quokka?", "answer": "Nobody"},
    ]
    with django_capture_on_commit_callbacks(execute=True):
        question_set = question_set_import(project=filings, file=question_file(rows))
    assert sent == [("config.tasks.echo_recall", [filings.pk, question_set.pk])]
    html = search(client_alice, filings, "").content.decode()
    assert "echo recall being measured" in html

    indexing.question_sets_echo_recall(project_id=filings.pk, question_set_id=question_set.pk)

    figure = QuestionSet.objects.get(pk=question_set.pk).echo_recall
    assert figure["index_prefix"] == filings.index_prefix
    assert (figure["k"], figure["questions"], figure["with_evidence"]) == (5, 3, 2)
    assert figure["evidence_mapped"] == 2 and figure["recall"] == 1.0
    html = search(client_alice, filings, "").content.decode()
    echo = html.split('id="echo-recall"')[1].split("</aside>")[0]
    assert "echo recall@5 of" in echo and "qa.jsonl" in echo
    assert "<strong>1.00</strong> — what a trained agent has to beat" in echo
    assert "2 of 3 questions had evidence" in echo


@pytest.mark.django_db
def test_a_new_index_measures_the_echo_recall_again(filings, sent):
    rows = [
        {
            "question": "What was Quokka revenue?",
            "answer": "12 million",
            "evidence": [
                {"text": "Quokka revenue was 12 million dollars", "doc": "QUOKKA_2023_10K"}
            ],
        }
    ]
    question_set = question_set_import(project=filings, file=question_file(rows))
    indexing.question_sets_echo_recall(project_id=filings.pk)
    first = QuestionSet.objects.get(pk=question_set.pk).echo_recall
    sent.clear()

    parsed(filings, "WOMBAT_2023_10K", "Wombat", ["Wombat revenue was 12 million dollars too."])
    prefix = indexing.project_index_refresh(project_id=filings.pk)

    assert sent == [("config.tasks.echo_recall", [filings.pk, None])]
    indexing.question_sets_echo_recall(project_id=filings.pk)
    again = QuestionSet.objects.get(pk=question_set.pk).echo_recall
    assert (first["index_prefix"], again["index_prefix"]) == (filings.index_prefix, prefix)


def test_a_build_of_an_older_index_format_is_not_reused(monkeypatch):
    # A release that changes what the index holds must build again, not load (and fail on)
    # the older format's build of the same documents.
    project = SimpleNamespace(pk=7)
    documents = [SimpleNamespace(pk=1, sha256="ab" * 32, entity="Zanzibar")]
    now = indexing.index_prefix_of(project, documents)
    assert now == indexing.index_prefix_of(project, documents)
    monkeypatch.setattr(search_index, "FORMAT_VERSION", search_index.FORMAT_VERSION - 1)
    older = indexing.index_prefix_of(project, documents)
    assert older != now and older.startswith("projects/7/index/")
