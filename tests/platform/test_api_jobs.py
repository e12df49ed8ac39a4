"""OpenAI's files and fine-tuning jobs API at /v1, driven by the real `openai` client against
the live server with a personal API token, on the real services (Postgres, S3, the broker).

A job is a run created by runs.services.run_create; its preparation goes to a queue no
worker serves, so it stays queued unless a test moves it on (as a worker would leave it)."""

import json
from pathlib import Path

import openai
import pypdfium2
import pytest
from django.utils import timezone
from openai import OpenAI

from corpora.models import Document, QuestionSet
from corpora.services import project_create
from runs.models import Checkpoint, Run, RunMetric
from serving.services import api_token_create

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PDFS = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev" / "pdfs"

QUESTIONS = "\n".join(
    json.dumps(line)
    for line in [
        {"question": "What was ACME's revenue in 2021?", "answer": "seven", "entity": "ACME"},
        {"question": "What dividend did Globex pay?", "answer": "two cents"},
        {"question": "Who audits ACME?", "answer": "Initech LLP"},
    ]
).encode()


@pytest.fixture(autouse=True)
def _no_worker_takes_the_runs(knob):
    """Run preparations go to a queue of this test's own: no worker (of any session sharing
    the broker) starts them."""
    knob("SLEUTH_INGEST_QUEUE", "api-jobs-test-nobody-serves-this")


@pytest.fixture
def client_for(live_server):
    def make(user, **options) -> OpenAI:
        _, token = api_token_create(user=user, name="tests")
        return OpenAI(base_url=live_server.url + "/v1", api_key=token, max_retries=0, **options)

    return make


def upload(client: OpenAI, name: str = "qa.jsonl", content: bytes = QUESTIONS, **options):
    return client.files.create(file=(name, content), purpose="fine-tune", **options)


def test_a_question_file_uploads_as_a_question_set_of_the_newest_project(
    project, alice, client_for
):
    client = client_for(alice)

    uploaded = upload(client)

    question_set = QuestionSet.objects.get()
    assert question_set.project == project and question_set.questions.count() == 3
    assert uploaded.id == f"file-{question_set.pk}" and uploaded.object == "file"
    assert uploaded.filename == "qa.jsonl" and uploaded.purpose == "fine-tune"
    assert uploaded.bytes == len(QUESTIONS) and uploaded.created_at > 0
    assert client.files.retrieve(uploaded.id).filename == "qa.jsonl"
    assert [f.id for f in client.files.list(purpose="fine-tune")] == [uploaded.id]
    document = project.documents.get()  # the project's document is a file too
    assert [f.id for f in client.files.list()] == [uploaded.id, f"file-doc-{document.pk}"]


def real_filings_pdf(path: Path) -> Path:
    """One PDF of every real filing at hand (about 2.2 MB): a size real 10-Ks have."""
    merged = pypdfium2.PdfDocument.new()
    for pdf in sorted(PDFS.glob("*.pdf")):
        merged.import_pages(pypdfium2.PdfDocument(pdf))
    merged.save(path)
    return path


@pytest.mark.skipif(not PDFS.is_dir(), reason="shared datasets are not beside the clone")
def test_a_multi_megabyte_filing_uploads_through_the_openai_client(
    project, alice, client_for, tmp_path
):
    pdf = real_filings_pdf(tmp_path / "filings.pdf")
    assert pdf.stat().st_size > 2 * 1024 * 1024

    with pdf.open("rb") as file:
        uploaded = client_for(alice).files.create(file=file, purpose="user_data")

    document = project.documents.get(name="filings.pdf")
    assert uploaded.id == f"file-doc-{document.pk}" and document.size == pdf.stat().st_size


def test_a_large_body_without_a_valid_token_is_refused_before_it_is_read(live_server, settings):
    body = b"x" * (settings.REQUEST_BODY_MAX_BYTES + 1)
    client = OpenAI(
        base_url=live_server.url + "/v1", api_key="sk-sleuth-not-a-token", max_retries=0
    )

    with pytest.raises(openai.APIStatusError) as refused:
        client.files.create(file=("big.txt", body), purpose="user_data")

    assert refused.value.status_code == 413


def test_a_document_over_the_upload_limit_is_refused_with_a_token_too(
    project, alice, client_for, settings
):
    settings.DOCUMENT_MAX_BYTES = settings.QUESTION_FILE_MAX_BYTES = 2 * 1024 * 1024

    with pytest.raises(openai.APIStatusError) as refused:
        client_for(alice).files.create(
            file=("big.txt", b"x" * (3 * 1024 * 1024)), purpose="user_data"
        )

    assert refused.value.status_code == 413
    assert not project.documents.filter(name="big.txt").exists()


def test_the_openai_project_header_picks_the_project(project, alice, client_for):
    older = project_create(owner=alice, name="Older")
    Document.objects.filter(project=project).update(project=older)

    uploaded = upload(client_for(alice, project=str(older.pk)))

    assert QuestionSet.objects.get(pk=uploaded.id.removeprefix("file-")).project == older
    with pytest.raises(openai.NotFoundError):
        upload(client_for(alice, project="999999"))


def test_a_document_uploads_with_purpose_user_data_and_is_no_training_file(
    project, alice, client_for
):
    client = client_for(alice)

    uploaded = client.files.create(
        file=("acme.txt", b"ACME revenue in 2021 was seven."), purpose="user_data"
    )

    document = project.documents.get(name="acme.txt")
    assert uploaded.id == f"file-doc-{document.pk}" and uploaded.purpose == "user_data"
    assert document.status == Document.Status.UPLOADED  # its parse is queued
    assert uploaded.status == "uploaded"
    Document.objects.filter(pk=document.pk).update(status=Document.Status.PARSED)
    assert client.files.retrieve(uploaded.id).status == "processed"
    assert client.files.retrieve(uploaded.id).bytes == document.size
    with pytest.raises(openai.BadRequestError) as refused:
        client.fine_tuning.jobs.create(training_file=uploaded.id, model="quick-cpu")
    assert refused.value.body["param"] == "training_file"


def test_a_bad_question_file_is_400_with_its_problems_and_imports_nothing(
    project, alice, client_for
):
    with pytest.raises(openai.BadRequestError) as refused:
        upload(client_for(alice), content=b'{"question": "no answer"}\nnot json\n')

    assert "line" in refused.value.message
    assert not QuestionSet.objects.exists()


def test_a_job_starts_a_queued_run_from_a_preset_with_overrides(project, alice, client_for):
    client = client_for(alice)
    training_file = upload(client)

    job = client.fine_tuning.jobs.create(
        training_file=training_file.id,
        model="quick-cpu",
        hyperparameters={"steps": 2, "group_size": 4, "n_epochs": "auto"},
        suffix="From code",
    )

    run = Run.objects.get()
    assert job.id == f"ftjob-{run.pk}" and job.object == "fine_tuning.job"
    assert job.status == "queued" and job.model == "quick-cpu"
    assert job.training_file == training_file.id and job.fine_tuned_model is None
    assert run.name == "From code" and run.preset == "quick-cpu"
    assert run.question_set_id == int(training_file.id.removeprefix("file-"))
    assert run.config["steps"] == 2 and run.config["group_size"] == 4
    assert client.fine_tuning.jobs.retrieve(job.id).status == "queued"
    events = client.fine_tuning.jobs.list_events(job.id)
    assert events.data[0].object == "fine_tuning.job.event"
    assert "Queued" in events.data[0].message and events.data[0].level == "info"


def test_default_is_the_default_preset(project, alice, client_for):
    from runs.presets import DEFAULT_PRESET

    client = client_for(alice)

    job = client.fine_tuning.jobs.create(training_file=upload(client).id, model="default")

    assert job.model == DEFAULT_PRESET == Run.objects.get().preset


@pytest.mark.parametrize(
    "hyperparameters",
    [{"n_epochs": 3}, {"steps": 0}, {"loss": "adam"}, {"temperature": 2.0}],
)
def test_a_hyperparameter_the_run_form_refuses_is_400(project, alice, client_for, hyperparameters):
    client = client_for(alice)
    training_file = upload(client)

    with pytest.raises(openai.BadRequestError) as refused:
        client.fine_tuning.jobs.create(
            training_file=training_file.id, model="quick-cpu", hyperparameters=hyperparameters
        )

    assert refused.value.body["param"].startswith("hyperparameters.")
    assert refused.value.code == "invalid_hyperparameter"
    assert not Run.objects.exists()


def test_an_unknown_model_and_a_run_the_service_refuses_are_400(project, alice, client_for):
    client = client_for(alice)
    training_file = upload(client)

    with pytest.raises(openai.BadRequestError) as unknown:
        client.fine_tuning.jobs.create(training_file=training_file.id, model="gpt-4o")
    Document.objects.all().delete()  # run_create refuses a project with nothing to read
    with pytest.raises(openai.BadRequestError) as refused:
        client.fine_tuning.jobs.create(training_file=training_file.id, model="quick-cpu")

    assert unknown.value.code == "model_not_found"
    assert "document" in refused.value.message
    assert not Run.objects.exists()


def test_cancelling_a_queued_job_cancels_its_run(project, alice, client_for):
    client = client_for(alice)
    job = client.fine_tuning.jobs.create(training_file=upload(client).id, model="quick-cpu")

    cancelled = client.fine_tuning.jobs.cancel(job.id)

    assert cancelled.status == "cancelled" and cancelled.finished_at is not None
    assert Run.objects.get().status == Run.Status.CANCELLED
    messages = [e.message for e in client.fine_tuning.jobs.list_events(job.id)]
    assert "Cancel requested." in messages


def test_jobs_and_events_page_with_after_and_limit(project, alice, client_for, settings):
    settings.SLEUTH_MAX_ACTIVE_RUNS = 5
    client = client_for(alice)
    training_file = upload(client).id
    created = [
        client.fine_tuning.jobs.create(training_file=training_file, model="quick-cpu", suffix=n)
        for n in "abc"
    ]
    client.fine_tuning.jobs.cancel(created[0].id)

    first = client.fine_tuning.jobs.list(limit=2)
    second = client.fine_tuning.jobs.list(limit=2, after=first.data[-1].id)
    every = list(client.fine_tuning.jobs.list(limit=1))  # the client follows the pages
    events = client.fine_tuning.jobs.list_events(created[0].id, limit=1)
    older = client.fine_tuning.jobs.list_events(created[0].id, limit=10, after=events.data[0].id)

    newest_first = [job.id for job in reversed(created)]
    assert [j.id for j in first.data] == newest_first[:2] and first.has_more
    assert [j.id for j in second.data] == newest_first[2:] and not second.has_more
    assert [j.id for j in every] == newest_first
    assert events.has_more and len(events.data) == 1
    assert [e.message for e in older.data][-1].startswith("Queued") and not older.has_more


def test_a_succeeded_job_names_its_published_agent_and_lists_its_checkpoints(
    project, alice, client_for
):
    client = client_for(alice)
    job = client.fine_tuning.jobs.create(training_file=upload(client).id, model="quick-cpu")
    run = Run.objects.get()
    # What the run's worker leaves when it has trained, evaluated and published.
    RunMetric.objects.create(run=run, step=1, data={"step": 1, "loss": 0.5, "reward": 0.25})
    Checkpoint.objects.create(run=run, step=1, s3_prefix=f"{run.pk}/1", metrics={})
    Checkpoint.objects.create(
        run=run,
        step=2,
        s3_prefix=f"{run.pk}/2",
        is_final=True,
        metrics={"val/answer_score": 0.75},
        published_prefix=f"projects/{project.pk}/runs/{run.pk}/a/published/filings-agent",
    )
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, finished_at=timezone.now())

    done = client.fine_tuning.jobs.retrieve(job.id)
    checkpoints = client.fine_tuning.jobs.checkpoints.list(job.id)

    assert done.status == "succeeded" and done.fine_tuned_model == "filings-agent"
    assert [m.id for m in client.models.list()] == [done.fine_tuned_model]
    assert [c.step_number for c in checkpoints.data] == [2, 1]
    final, first = checkpoints.data
    assert final.fine_tuned_model_checkpoint == "filings-agent"
    assert final.metrics.to_dict()["val/answer_score"] == 0.75
    assert first.metrics.to_dict()["loss"] == 0.5 and first.fine_tuning_job_id == job.id


def test_a_failed_job_says_why(project, alice, client_for):
    client = client_for(alice)
    job = client.fine_tuning.jobs.create(training_file=upload(client).id, model="quick-cpu")
    Run.objects.update(status=Run.Status.FAILED, status_reason="The worker ran out of memory.")

    failed = client.fine_tuning.jobs.retrieve(job.id)

    assert failed.status == "failed" and failed.error.message == "The worker ran out of memory."


def test_another_customers_token_gets_404_for_every_id(project, alice, bob, client_for):
    alices = client_for(alice)
    training_file = upload(alices)
    job = alices.fine_tuning.jobs.create(training_file=training_file.id, model="quick-cpu")
    bobs = client_for(bob)
    project_create(owner=bob, name="Bob's")

    calls = [
        lambda: bobs.files.retrieve(training_file.id),
        lambda: bobs.fine_tuning.jobs.create(training_file=training_file.id, model="quick-cpu"),
        lambda: bobs.fine_tuning.jobs.retrieve(job.id),
        lambda: bobs.fine_tuning.jobs.cancel(job.id),
        lambda: bobs.fine_tuning.jobs.list_events(job.id),
        lambda: bobs.fine_tuning.jobs.checkpoints.list(job.id),
        lambda: bobs.fine_tuning.jobs.list(after=job.id),
        lambda: upload(bobs, extra_headers={"OpenAI-Project": str(project.pk)}),
    ]
    for call in calls:
        with pytest.raises(openai.NotFoundError):
            call()

    assert bobs.files.list().data == [] and bobs.fine_tuning.jobs.list().data == []
    assert Run.objects.get().status == Run.Status.QUEUED
    assert QuestionSet.objects.count() == 1


def test_ids_with_digits_int_cannot_read_are_not_found_not_a_crash(project, alice, client_for):
    client = client_for(alice)

    for ident in ("file-²", "file-٣", "file-1²"):  # str.isdigit says yes, int() says no
        with pytest.raises(openai.NotFoundError):
            client.files.retrieve(ident)
    with pytest.raises(openai.NotFoundError):
        upload(client, extra_query={"project": "²"})
