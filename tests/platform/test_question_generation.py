"""Generate questions from my documents (issue 15): the project page's button queues the
offline generator, whose set is a draft to review (edit, delete, accept) before a run may use
it; the set's JSONL file on S3 follows every change. On the real services (Postgres, S3)."""

import json

import pytest
from django.conf import settings

from config.tasks import question_set_draft
from core.s3 import s3_client
from corpora import indexing
from corpora.models import Question, QuestionGeneration, QuestionSet
from corpora.services import document_parse, document_upload, project_create
from corpora.views import FEW_QUESTIONS
from runs.forms import RunForm
from runs.services import RunRejected, run_create
from tests.helpers.documents import STATEMENTS, filing_file


def filing(project, entity: str, text: str):
    document = document_upload(project=project, file=filing_file(entity, text))
    return document_parse(document_id=document.pk)


def indexed(project):
    indexing.project_index_build(project_id=project.pk)
    project.refresh_from_db()
    return project


@pytest.fixture
def sent(monkeypatch):
    """Tasks the web side queues, recorded instead of sent: [(name, args)]."""
    from config.celery import app

    calls = []
    monkeypatch.setattr(app, "send_task", lambda name, args=None, **kw: calls.append((name, args)))
    return calls


@pytest.fixture
def tables(alice, sent):
    """alice's project whose two filings hold tables with numbers, indexed: they look like
    filings, so the filings pack's table questions are generated."""
    project = project_create(owner=alice, name="Tables")
    for entity, text in STATEMENTS.items():
        filing(project, entity, text)
    return indexed(project)


def s3_lines(question_set) -> list[dict]:
    body = s3_client().get_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=question_set.s3_key)
    return [json.loads(line) for line in body["Body"].read().decode().splitlines()]


def in_step(question_set) -> list[dict]:
    """The set's S3 file, checked against its rows and recorded size."""
    question_set.refresh_from_db()
    lines = s3_lines(question_set)
    rows = list(question_set.questions.values_list("question", "answer"))
    assert [(line["question"], line["answer"]) for line in lines] == rows
    head = s3_client().head_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=question_set.s3_key)
    assert head["ContentLength"] == question_set.size
    return lines


def generate(client, project) -> QuestionSet:
    """Press the button, then run the queued task here (as the worker would)."""
    response = client.post(f"/projects/{project.pk}/question-sets/generate/")
    assert response.status_code == 302
    generation = QuestionGeneration.objects.get(project=project)
    page = client.get(f"/projects/{project.pk}/").content.decode()
    assert "Generating questions…" in page
    question_set_draft(generation.pk)
    generation.refresh_from_db()
    assert generation.status == "done", generation.error
    return generation.question_set


@pytest.mark.django_db
def test_the_button_queues_the_offline_generator_whose_set_is_a_draft(
    client_alice, tables, sent, django_capture_on_commit_callbacks
):
    page = client_alice.get(f"/projects/{tables.pk}/").content.decode()
    assert "Generate questions from my documents" in page

    with django_capture_on_commit_callbacks(execute=True):
        client_alice.post(f"/projects/{tables.pk}/question-sets/generate/")
    generation = QuestionGeneration.objects.get(project=tables)
    assert ("config.tasks.question_set_draft", [generation.pk]) in sent
    page = client_alice.get(f"/projects/{tables.pk}/").content.decode()
    assert "Generating questions…" in page
    assert "Generate questions from my documents</button>" not in page

    assert question_set_draft(generation.pk) == "done"
    question_set = QuestionSet.objects.get(project=tables)
    assert question_set.needs_review and question_set.generated_by == "offline"
    assert question_set.questions.count() >= 2
    assert all(q.answer and q.entity for q in question_set.questions.all())
    lines = in_step(question_set)
    assert all(line["evidence"] for line in lines)

    page = client_alice.get(f"/projects/{tables.pk}/").content.decode()
    assert "Draft: review before a run uses it" in page
    assert "Generating questions…" not in page
    detail = client_alice.get(f"/question-sets/{question_set.pk}/").content.decode()
    assert "Draft: review before a run uses it" in detail
    assert "offline from the sentences (and, in filings, the tables) of your documents" in detail
    assert "Accept all" in detail
    first = question_set.questions.first()
    assert f"/questions/{first.pk}/edit/" in detail and f"/questions/{first.pk}/delete/" in detail


@pytest.mark.django_db(transaction=True)
def test_no_page_lists_the_draft_while_it_says_questions_are_being_generated(
    client_alice, tables, monkeypatch
):
    """The draft and the generation's end are one commit. A browser test once loaded the
    project page between two: the draft listed, "Generating questions…" still shown and no
    button to generate again."""
    from corpora import generation as generation_module

    pages = []

    def page_once_the_draft_is_committed(project_id, question_set_id):
        pages.append(client_alice.get(f"/projects/{project_id}/").content.decode())

    monkeypatch.setattr(generation_module, "echo_recall_enqueue", page_once_the_draft_is_committed)
    generate(client_alice, tables)
    (page,) = pages
    assert "Draft: review before a run uses it" in page
    assert "Generating questions…" not in page
    assert "Generate questions from my documents</button>" in page


@pytest.mark.django_db
def test_no_button_without_an_index(client_alice, alice, sent):
    project = project_create(owner=alice, name="Empty")
    assert "Generate questions" not in client_alice.get(f"/projects/{project.pk}/").content.decode()
    client_alice.post(f"/projects/{project.pk}/question-sets/generate/")
    assert not QuestionGeneration.objects.filter(project=project).exists()


@pytest.mark.django_db
def test_too_few_tables_make_no_set_and_the_page_says_why(client_alice, alice, sent):
    project = project_create(owner=alice, name="Prose")
    filing(project, "Zanzibar", "Zanzibar Shipping annual report. We ship things by sea.")
    indexed(project)

    client_alice.post(f"/projects/{project.pk}/question-sets/generate/")
    generation = QuestionGeneration.objects.get(project=project)
    assert question_set_draft(generation.pk) == "failed"

    assert not QuestionSet.objects.filter(project=project).exists()
    page = client_alice.get(f"/projects/{project.pk}/").content.decode()
    assert "too few tables" in page
    assert "Generate questions from my documents</button>" in page  # can try again


@pytest.mark.django_db
def test_a_generated_set_too_small_to_compare_agents_on_says_so(client_alice, tables):
    question_set = generate(client_alice, tables)
    count = question_set.questions.count()
    assert 2 <= count < FEW_QUESTIONS  # two short filings hold a few questions, not thirty

    def notice() -> str:
        detail = client_alice.get(f"/question-sets/{question_set.pk}/").content.decode()
        _, found, rest = detail.partition('id="few-questions">')
        return rest.split("</p>", 1)[0] if found else ""

    assert f"Only {count} questions" in notice() and "Import questions" in notice()

    # Enough questions: no notice.
    Question.objects.bulk_create(
        Question(question_set=question_set, position=count + i, question=f"Q{i}?", answer="A")
        for i in range(1, FEW_QUESTIONS - count + 1)
    )
    assert notice() == ""

    # A set the customer imported is theirs to size: no notice however few.
    question_set.questions.filter(position__gt=count).delete()
    QuestionSet.objects.filter(pk=question_set.pk).update(generated_by="")
    assert notice() == ""


@pytest.mark.django_db
def test_edit_and_delete_keep_the_s3_file_in_step_and_accept_clears_the_draft(client_alice, tables):
    question_set = generate(client_alice, tables)
    first, second = list(question_set.questions.all())[:2]
    count = question_set.questions.count()

    response = client_alice.post(
        f"/questions/{first.pk}/edit/",
        {"question": "What was Acme's net income in 2018?", "answer": "$5,363 million"},
    )
    assert response.status_code == 302
    first.refresh_from_db()
    assert (first.question, first.answer) == (
        "What was Acme's net income in 2018?",
        "$5,363 million",
    )
    lines = in_step(question_set)
    assert lines[0]["answer"] == "$5,363 million" and lines[0]["evidence"]  # evidence kept

    client_alice.post(f"/questions/{first.pk}/edit/", {"question": "", "answer": "x"})
    first.refresh_from_db()
    assert first.answer == "$5,363 million"  # refused: nothing changed

    client_alice.post(f"/questions/{second.pk}/delete/")
    assert not question_set.questions.filter(pk=second.pk).exists()
    assert len(in_step(question_set)) == count - 1

    client_alice.post(f"/question-sets/{question_set.pk}/accept/")
    question_set.refresh_from_db()
    assert not question_set.needs_review
    detail = client_alice.get(f"/question-sets/{question_set.pk}/").content.decode()
    assert "Draft: review" not in detail and "Accept all" not in detail
    # An accepted set is no draft any more: lines are no longer edited one by one.
    client_alice.post(f"/questions/{first.pk}/delete/")
    assert question_set.questions.filter(pk=first.pk).exists()


@pytest.mark.django_db
def test_a_draft_is_not_offered_to_a_run_and_run_creation_refuses_it(client_alice, alice, tables):
    question_set = generate(client_alice, tables)

    assert question_set not in RunForm(project=tables).fields["question_set"].queryset
    with pytest.raises(RunRejected, match="draft"):
        run_create(
            project=tables,
            user=alice,
            name="Too soon",
            question_set=question_set,
            preset="quick-cpu",
        )

    client_alice.post(f"/question-sets/{question_set.pk}/accept/")
    question_set.refresh_from_db()
    assert question_set in RunForm(project=tables).fields["question_set"].queryset


@pytest.mark.django_db
def test_another_customer_gets_404_and_changes_nothing(client, client_alice, bob, tables):
    question_set = generate(client_alice, tables)
    question = question_set.questions.first()
    before = in_step(question_set)
    client.force_login(bob)

    for url, data in [
        (f"/projects/{tables.pk}/question-sets/generate/", {}),
        (f"/questions/{question.pk}/edit/", {"question": "Mine?", "answer": "yes"}),
        (f"/questions/{question.pk}/delete/", {}),
        (f"/question-sets/{question_set.pk}/accept/", {}),
    ]:
        assert client.post(url, data).status_code == 404, url

    question_set.refresh_from_db()
    assert question_set.needs_review
    assert in_step(question_set) == before
    assert QuestionGeneration.objects.filter(project=tables).count() == 1


def test_an_edit_that_lands_after_the_set_was_accepted_is_refused(client_alice, tables):
    from corpora.generation import question_edit, question_set_accept
    from corpora.services import QuestionImportRejected

    question_set = generate(client_alice, tables)
    first = question_set.questions.first()
    seen_as_draft = question_set.questions.get(pk=first.pk)  # the page was read as a draft
    question_set_accept(question_set=question_set)

    with pytest.raises(QuestionImportRejected) as refused:
        question_edit(question=seen_as_draft, text="Changed?", answer="1")
    assert "accepted" in refused.value.problems[0][1]
    first.refresh_from_db()
    assert first.question != "Changed?"
