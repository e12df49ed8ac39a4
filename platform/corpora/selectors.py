"""Reads for projects, documents and question sets. Every lookup by id is scoped to its
owner and fails closed: another customer's object (or a staff member asking for it)
gets a 404, exactly like an object that does not exist."""

from datetime import timedelta

from django.db.models import Count, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404
from django.utils import timezone

from .models import Document, Project, Question, QuestionSet
from .parse_slots import parse_places


def projects_for_user(*, user) -> QuerySet[Project]:
    return Project.objects.filter(owner=user).annotate(
        document_count=Count("documents", distinct=True),
        question_set_count=Count("question_sets", distinct=True),
    )


def project_get_for_user(*, user, project_id: int) -> Project:
    return get_object_or_404(Project, pk=project_id, owner=user)


def document_get_for_user(*, user, document_id: int) -> Document:
    return get_object_or_404(
        Document.objects.select_related("project"), pk=document_id, project__owner=user
    )


def project_documents(*, project: Project) -> list[Document]:
    """The project's documents for its page, each with `parse_place`: its place in its
    account's line for a parse (1: next) while it waits for its turn, else None."""
    documents = list(project.documents.all())
    waiting = [
        d for d in documents if d.status == Document.Status.UPLOADED and d.parse_queued_at is None
    ]
    places = parse_places(owner_id=project.owner_id) if waiting else {}
    for document in documents:
        document.parse_place = places.get(document.pk)
    return documents


def question_set_get_for_user(*, user, question_set_id: int) -> QuestionSet:
    return get_object_or_404(
        QuestionSet.objects.select_related("project"), pk=question_set_id, project__owner=user
    )


def question_get_for_user(*, user, question_id: int) -> Question:
    return get_object_or_404(
        Question.objects.select_related("question_set__project"),
        pk=question_id,
        question_set__project__owner=user,
    )


def documents_for_project(*, project: Project) -> QuerySet[Document]:
    return Document.objects.filter(project=project)


def question_sets_for_project(*, project: Project) -> QuerySet[QuestionSet]:
    """The project's question sets with their counts: questions, those with golden
    evidence, and the distinct entities they name."""
    return QuestionSet.objects.filter(project=project).annotate(
        question_count=Count("questions"),
        evidence_count=Count("questions", filter=~Q(questions__evidence=[])),
        entity_count=Count("questions__entity", distinct=True, filter=~Q(questions__entity="")),
    )


def question_set_source(question_set: QuestionSet) -> str:
    """Where a set's questions came from: "generated" (from the documents, by the question
    generator or a run's synthesis), "playground" (answers rated on the playground), else
    "uploaded" (a question file)."""
    if question_set.generated_by or "/question-sets/generated-" in question_set.s3_key:
        return "generated"
    if question_set.s3_key.endswith("/from-the-playground.jsonl"):
        return "playground"
    return "uploaded"


def account_storage_used(*, user) -> int:
    """Bytes this account holds, counted against its quota: documents, question sets and
    its runs' checkpoints and archives (the sizes recorded when they were written)."""
    documents = Document.objects.filter(project__owner=user).aggregate(total=Sum("size"))
    question_sets = QuestionSet.objects.filter(project__owner=user).aggregate(total=Sum("size"))
    # Through the projects' runs (runs.Checkpoint): corpora does not import the runs app.
    artifacts = Project.objects.filter(owner=user).aggregate(
        total=Sum("runs__checkpoints__size_bytes")
    )
    return sum(part["total"] or 0 for part in (documents, question_sets, artifacts))


# A document whose parse began this long ago stops the page polling for its index build
# (corpora.indexing) even if it is not indexed yet: a failed build must not keep every open
# page polling. Long enough for a parse at its time limit and then a build.
INDEX_WAIT = timedelta(minutes=10)


def documents_in_progress(*, project: Project) -> bool:
    """Whether any document still waits to be parsed, or was parsed a moment ago and waits
    to be indexed (the page keeps polling until none does)."""
    return project.documents.filter(
        Q(status=Document.Status.UPLOADED)
        | Q(status=Document.Status.PARSED, parse_started_at__gte=timezone.now() - INDEX_WAIT)
    ).exists()


def project_suggested_pack(*, project: Project) -> str:
    """The domain pack at least half of the project's parsed documents look like (their
    `looks_like`, read at parse time); "" for none. An offer for the new-run form."""
    parsed = project.documents.filter(status__in=[Document.Status.PARSED, Document.Status.INDEXED])
    total = parsed.count()
    if not total:
        return ""
    top = (
        parsed.exclude(looks_like="")
        .values("looks_like")
        .annotate(n=Count("pk"))
        .order_by("-n", "looks_like")
        .first()
    )
    return top["looks_like"] if top and top["n"] * 2 >= total else ""
