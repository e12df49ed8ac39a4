"""The project search page: the chunks the agent would see for a query, on the project's
current index (corpora.indexing), beside the echo recall of its question sets; and one
page of a document's parsed text."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.cache import cache
from django.db import transaction

from core.s3 import s3_client
from engine.search.store import IndexTooLarge

from .indexing import (
    current_index_prefix,
    echo_recall_enqueue,
    echo_recall_outdated,
    load_index_for_web,
    project_index_enqueue,
)
from .models import Document, Project

logger = logging.getLogger(__name__)

RESULTS = 5  # chunks shown per query: what one search shows the agent by default
QUERY_MAX_CHARS = 300
# A page asks for a missing index build (or echo recall) at most this often per project.
ASK_AGAIN_SECONDS = 60


@dataclass
class Hit:
    rank: int
    chunk_id: str
    doc: str
    document_id: int | None
    page: int | None
    entity: str | None
    score: float
    text: str


@dataclass
class EchoRecall:
    name: str
    question_set_id: int
    figure: dict  # QuestionSet.echo_recall, {} while not measured
    current: bool  # measured on the index the page searches


@dataclass
class SearchPage:
    """What the page shows. `state`: "no-documents" (upload first), "unreadable" (none could
    be read), "indexing" (no index yet), "too-large" (the index is past what a web process
    may load: `index_mb` estimated against `budget_mb`) or "ready"; `behind` counts
    documents not in the index yet (being read or indexed)."""

    state: str
    behind: int = 0
    index_mb: int = 0
    budget_mb: int = 0
    updating: bool = False  # the documents changed since the index was built
    hits: list[Hit] | None = None  # None: no query asked
    echo: list[EchoRecall] = field(default_factory=list)


def _ask_once_a_while(what: str, project_id: int, ask) -> None:
    if cache.add(f"sleuth:search-asked:{what}:{project_id}", 1, timeout=ASK_AGAIN_SECONDS):
        transaction.on_commit(ask)


def project_search_page(*, project: Project, query: str = "") -> SearchPage:
    """The page for `query` ("" shows the form alone). A project whose index is missing or
    behind its documents, or whose question sets lack their echo recall on it, asks for
    them again (a build lost with the broker or failed on a storage error heals itself)."""
    documents = project.documents.all()
    readable = documents.filter(
        status__in=[Document.Status.PARSED, Document.Status.INDEXED]
    ).exclude(sections_key="")
    waiting = documents.filter(status=Document.Status.UPLOADED).count()
    if not readable.exists():
        if waiting:
            return SearchPage(state="indexing", behind=waiting)
        return SearchPage(state="unreadable" if documents.exists() else "no-documents")
    prefix = project.index_prefix
    updating = prefix != current_index_prefix(project)
    if updating:
        _ask_once_a_while("index", project.pk, lambda: project_index_enqueue(project.pk))
    elif echo_recall_outdated(project):
        _ask_once_a_while("echo", project.pk, lambda: echo_recall_enqueue(project.pk))
    if not prefix:
        return SearchPage(state="indexing", behind=waiting + readable.count())
    # A build marks its documents indexed: those still parsed are not in it yet.
    behind = waiting + (documents.filter(status=Document.Status.PARSED).count() if updating else 0)
    page = SearchPage(state="ready", behind=behind, updating=updating, echo=_echo_recalls(project))
    if query:
        try:
            index = load_index_for_web(prefix)
        except IndexTooLarge as refused:
            # Not an error to retry: this index stays past the web's budget (the workers,
            # which train on it and answer the API with it, have none).
            logger.info("project %s: %s", project.pk, refused)
            page.state = "too-large"
            page.index_mb = round(refused.estimated_bytes / 2**20)
            page.budget_mb = round(refused.budget_bytes / 2**20)
            return page
        except (BotoCoreError, ClientError, OSError, ValueError):
            logger.warning("project %s: index %s could not be loaded", project.pk, prefix)
            _ask_once_a_while("index", project.pk, lambda: project_index_enqueue(project.pk))
            return SearchPage(state="indexing", behind=page.behind)
        page.hits = _hits(project, index.search(query[:QUERY_MAX_CHARS], k=RESULTS))
    return page


def _hits(project: Project, found) -> list[Hit]:
    ids = dict(project.documents.values_list("name", "pk"))
    return [
        Hit(
            rank=rank,
            chunk_id=hit.chunk_id,
            doc=hit.doc,
            document_id=ids.get(hit.doc),
            page=hit.page,
            entity=hit.entity,
            score=hit.score,
            text=hit.text,
        )
        for rank, hit in enumerate(found, start=1)
    ]


def _echo_recalls(project: Project) -> list[EchoRecall]:
    return [
        EchoRecall(
            name=name,
            question_set_id=pk,
            figure=figure or {},
            current=(figure or {}).get("index_prefix") == project.index_prefix,
        )
        for pk, name, figure in project.question_sets.values_list("pk", "name", "echo_recall")
    ]


@dataclass
class PageText:
    """One page of a document's parsed text: its sections (title, text) in order."""

    number: int
    sections: list[dict]
    read: bool  # False: the document has no parsed text (yet)


def document_page_text(*, document: Document, number: int) -> PageText:
    """The sections of page `number` of the document, read from its parsed sections on S3
    (one line at a time: a long document is never held whole)."""
    if not document.sections_key:
        return PageText(number=number, sections=[], read=False)
    body = s3_client().get_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=document.sections_key)
    sections = []
    for line in body["Body"].iter_lines():
        if line.strip():
            section = json.loads(line)
            if section.get("page") == number:
                sections.append({"title": section.get("title") or "", "text": section["text"]})
    return PageText(number=number, sections=sections, read=True)
