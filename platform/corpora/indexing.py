"""A project's BM25 search index, built as soon as its documents are parsed.

A build is immutable and named by the documents it holds (`projects/P/index/<fingerprint>`:
their ids, contents and entities, and the index format), so an unchanged project reuses it
and a new upload, a deletion or an entity edit gets a new one. `Project.index_prefix` names
the newest build whose documents are still the project's: the search page searches it, a run
builds (or reuses) its own at the start.

Builds are queued coalesced: a parse that succeeds, an entity edit or a deletion asks for a
build, and only one build per project waits in the queue at a time (`project_index_enqueue`).
The build reads the documents as they are when it starts, so a burst of uploads makes one or
two builds, not one per file; a build for a fingerprint already on S3 is reused.

Each new current build also queues the echo recall of the project's question sets (the
question itself as the query, the baseline every agent must beat), stored on the set.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import threading
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from core.local_copies import INDEX_COPIES, copies_root
from core.queues import enqueue
from core.s3 import delete_s3_prefix, s3_client

from .models import Document, Project, QuestionSet

logger = logging.getLogger(__name__)

# How long a queued build keeps others for the same project from being queued (a build that
# never reached a worker stops blocking after it).
QUEUED_SECONDS = 120
ECHO_RECALL_K = 5
# The echo recall of a large question set is measured on its first questions with evidence.
ECHO_RECALL_MAX_QUESTIONS = 1000


class IndexFailed(Exception):
    """An index that cannot be built; the message is for the customer."""


class DocumentsChanged(IndexFailed):
    """A document went away while its index was built; the build was deleted again."""


def _queued_key(project_id: int) -> str:
    return f"sleuth:index-queued:{project_id}"


def readable_documents(project: Project):
    return project.documents.filter(
        status__in=[Document.Status.PARSED, Document.Status.INDEXED]
    ).exclude(sections_key="")


def index_prefix_of(project: Project, documents) -> str:
    """Where the build of exactly these documents lives (or would), in the index format of
    this release: a build of an older format is not reused, it is built again."""
    from engine.search.index import FORMAT_VERSION

    keys = [f"format {FORMAT_VERSION}", *(f"{d.pk}:{d.sha256}:{d.entity}" for d in documents)]
    fingerprint = hashlib.sha256("\n".join(keys).encode()).hexdigest()[:16]
    return f"projects/{project.pk}/index/{fingerprint}"


def current_index_prefix(project: Project) -> str:
    """The prefix of the build of the project's readable documents as they are now."""
    return index_prefix_of(project, list(readable_documents(project).order_by("pk")))


def project_index_build(*, project_id: int) -> str:
    """Build (or reuse) the project's BM25 index from its parsed documents' sections and
    return its S3 prefix. Documents become indexed, and the build becomes the project's
    current index unless its documents changed meanwhile. IndexFailed when there is
    nothing to index; DocumentsChanged when a document was deleted during the build."""
    from engine.documents.chunking import Section, chunk_sections
    from engine.search.index import SearchIndex
    from engine.search.store import MANIFEST, upload_index

    project = Project.objects.get(pk=project_id)
    documents = list(readable_documents(project).order_by("pk"))
    if not documents:
        raise IndexFailed("No readable documents: upload documents and wait until they are parsed.")
    prefix = index_prefix_of(project, documents)
    client, bucket = s3_client(), settings.S3_ARTIFACTS_BUCKET
    built = False
    if not _exists(client, bucket, f"{prefix}/{MANIFEST}"):
        chunks, limit, over = [], settings.SLEUTH_INDEX_MAX_CHUNKS, []
        for document in documents:
            body = client.get_object(Bucket=bucket, Key=document.sections_key)
            sections = [
                Section(text=r["text"], page=r.get("page"), title=r.get("title"))
                for r in map(json.loads, body["Body"].read().decode().splitlines())
            ]
            found = chunk_sections(document.name, sections, document.entity or None)
            if len(chunks) + len(found) > limit:
                # The document that would take the index past the cap stays out of it; the
                # documents before it, and any smaller one after it, are still indexed.
                over.append((document, len(chunks) + len(found)))
                continue
            chunks.extend(found)
        if over:
            _refuse_over_cap(over, limit)
            documents = [d for d in documents if d not in {o for o, _ in over}]
            if not documents:
                raise IndexFailed(Document.objects.get(pk=over[0][0].pk).error)
            prefix = index_prefix_of(project, documents)
        if not chunks:
            raise IndexFailed("Your documents hold no text to search. Upload other documents.")
        with tempfile.TemporaryDirectory() as folder:
            SearchIndex.build(chunks).save(folder)
            upload_index(client, bucket, prefix, folder)
        built = True
    ids = [d.pk for d in documents]
    with transaction.atomic():
        # Deletion holds the owner's row while it lists and deletes builds: either it saw
        # this finished build and deleted it, or this sees its documents gone.
        get_user_model().objects.select_for_update().filter(pk=project.owner_id).first()
        if Document.objects.filter(pk__in=ids).count() != len(ids):
            if built:
                delete_s3_prefix(bucket, f"{prefix}/")
            raise DocumentsChanged("Documents were deleted while they were indexed.")
        Document.objects.filter(pk__in=ids, status=Document.Status.PARSED).update(
            status=Document.Status.INDEXED
        )
        if current_index_prefix(project) == prefix:
            Project.objects.filter(pk=project.pk).update(index_prefix=prefix)
    return prefix


def index_cap_message(chunks: int, limit: int) -> str:
    return (
        f"This project's index would hold {chunks:,} chunks, past the limit of {limit:,}; "
        "split the documents into another project."
    )


def _refuse_over_cap(over: list, limit: int) -> None:
    """Fail each document that would have taken the project's index past
    SLEUTH_INDEX_MAX_CHUNKS, with the reason; its file and parsed text stay (the customer
    deletes it or moves it to another project)."""
    for document, chunks in over:
        logger.info(
            "project %s: document %s left out of the index (%s chunks past %s)",
            document.project_id,
            document.pk,
            chunks,
            limit,
        )
        Document.objects.filter(
            pk=document.pk, status__in=[Document.Status.PARSED, Document.Status.INDEXED]
        ).update(status=Document.Status.FAILED, error=index_cap_message(chunks, limit))


def _exists(client, bucket: str, key: str) -> bool:
    try:
        client.head_object(Bucket=bucket, Key=key)
    except client.exceptions.ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound"):
            return False
        raise
    return True


# -- queueing -----------------------------------------------------------------------------


def project_index_enqueue(project_id: int) -> bool:
    """Queue a build of the project's index unless one is queued already; False when none
    was queued (one waits, or the broker is down: the search page asks again later)."""
    if not cache.add(_queued_key(project_id), 1, timeout=QUEUED_SECONDS):
        return False
    try:
        enqueue("config.tasks.project_index", args=[project_id])
    except Exception:
        cache.delete(_queued_key(project_id))
        logger.warning("could not queue the index of project %s", project_id, exc_info=True)
        return False
    return True


def project_index_refresh(*, project_id: int) -> str | None:
    """The index task: build the project's current index (None when it has nothing to
    index or its documents changed meanwhile: the change queued its own build), then
    queue the echo recall of its question sets and delete builds nobody needs any more."""
    cache.delete(_queued_key(project_id))  # changes from now on queue another build
    if not Project.objects.filter(pk=project_id).exists():
        return None
    try:
        prefix = project_index_build(project_id=project_id)
    except IndexFailed as failure:
        logger.info("project %s: no index built (%s)", project_id, failure)
        return None
    project = Project.objects.get(pk=project_id)
    if project.index_prefix == prefix:
        if echo_recall_outdated(project):
            echo_recall_enqueue(project_id)
        index_builds_prune(project=project)
    return prefix


def echo_recall_enqueue(project_id: int, question_set_id: int | None = None) -> bool:
    try:
        enqueue("config.tasks.echo_recall", args=[project_id, question_set_id])
    except Exception:
        logger.warning("could not queue the echo recall of project %s", project_id)
        return False
    return True


def index_builds_prune(*, project: Project) -> list[str]:
    """Delete the project's builds that are not its current index, that no run searched
    and that are older than SLEUTH_INDEX_STALE_BUILD_SECONDS (every upload makes a build:
    without this, a project's index storage would grow with the square of its documents).
    Nothing goes while a run of the project is active. Returns the deleted prefixes."""
    from engine.search.store import MANIFEST
    from runs.models import Run

    if not project.index_prefix or project.runs.filter(status__in=Run.ACTIVE).exists():
        return []
    client, bucket = s3_client(), settings.S3_ARTIFACTS_BUCKET
    keep = {project.index_prefix, *project.runs.values_list("index_prefix", flat=True)}
    listing = client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=f"projects/{project.pk}/index/", Delimiter="/"
    )
    builds = [p["Prefix"] for page in listing for p in page.get("CommonPrefixes", [])]
    cutoff = timezone.now() - timedelta(seconds=settings.SLEUTH_INDEX_STALE_BUILD_SECONDS)
    deleted = []
    for build in builds:
        if build.rstrip("/") in keep:
            continue
        try:
            made = client.head_object(Bucket=bucket, Key=f"{build}{MANIFEST}")["LastModified"]
        except client.exceptions.ClientError:
            continue  # unfinished (or being written): deletion of its documents takes it
        if made <= cutoff:
            delete_s3_prefix(bucket, build)
            deleted.append(build.rstrip("/"))
    return deleted


# -- loading ------------------------------------------------------------------------------

# Two caches per process, sharing the disk copies: the workers' (inference, training, echo
# recall) bounded by count, and the web's (the search page, the playground's echo column)
# bounded by count and by SLEUTH_WEB_INDEX_MEMORY_MB, since a web process serves every
# tenant's pages and one large index must not take its memory.
_index_caches: dict[str, object] = {}
_index_cache_lock = threading.Lock()


def _cache(web: bool = False):
    from engine.search.store import IndexCache

    kind = "web" if web else "worker"
    with _index_cache_lock:
        if kind not in _index_caches:
            _index_caches[kind] = IndexCache(
                s3_client(),
                settings.S3_ARTIFACTS_BUCKET,
                copies_root(INDEX_COPIES),
                max_loaded=settings.SLEUTH_INDEXES_LOADED,
                max_memory_bytes=settings.SLEUTH_WEB_INDEX_MEMORY_MB * 2**20 if web else None,
            )
        return _index_caches[kind]


def load_index(prefix: str):
    """The index at `prefix`, downloaded once per process (kept on local disk); at most
    SLEUTH_INDEXES_LOADED indexes stay loaded in memory. For workers: see load_index_for_web."""
    return _cache().get(prefix)


def load_index_for_web(prefix: str):
    """The index at `prefix` for a page served by a web process: as load_index, and the
    indexes this process keeps loaded for pages take at most SLEUTH_WEB_INDEX_MEMORY_MB
    (by their estimate; the least recently used go first). Raises
    engine.search.store.IndexTooLarge for an index estimated past that whole budget, before
    downloading it: the page says it cannot search it, and what still does."""
    return _cache(web=True).get(prefix)


def index_folder(prefix: str) -> Path:
    """The local folder of a cached index (for publishing)."""
    load_index(prefix)
    return _cache()._local_copy(prefix)


# -- echo recall ----------------------------------------------------------------------------


def engine_questions(question_set: QuestionSet):
    """The set's questions with answers, as the engine reads them."""
    from engine.documents.questions import Evidence, question_id
    from engine.documents.questions import Question as EngineQuestion

    return [
        EngineQuestion(
            id=q.external_id or f"{question_id(q.question)}-{q.position}",
            question=q.question,
            answer=q.answer,
            entity=q.entity or None,
            evidence=[
                Evidence(text=e["text"], doc=e.get("doc"), page=e.get("page"))
                for e in q.evidence or []
                if e.get("text")
            ],
        )
        for q in question_set.questions.exclude(answer="")
    ]


def echo_recall_outdated(project: Project) -> bool:
    """Whether a question set of the project has no echo recall on its current index."""
    if not project.index_prefix:
        return False
    return any(
        (figure or {}).get("index_prefix") != project.index_prefix
        for figure in project.question_sets.values_list("echo_recall", flat=True)
    )


def question_sets_echo_recall(*, project_id: int, question_set_id: int | None = None) -> dict:
    """Measure the echo recall@ECHO_RECALL_K of the project's question sets (or one of
    them) on its current index: the share of golden chunks that searching with the question
    itself finds in the top k, over the questions with evidence. Stored on each set; sets
    already measured on this index are skipped. Returns {set id: figure}."""
    from engine.documents.evidence import map_evidence
    from engine.search.recall import echo_recall

    project = Project.objects.filter(pk=project_id).first()
    if project is None or not project.index_prefix:
        return {}
    prefix = project.index_prefix
    sets = project.question_sets.all()
    if question_set_id is not None:
        sets = sets.filter(pk=question_set_id)
    measured = {}
    index = None
    for question_set in sets:
        if (question_set.echo_recall or {}).get("index_prefix") == prefix:
            continue
        if index is None:
            index = load_index(prefix)
        questions = engine_questions(question_set)
        with_evidence = [q for q in questions if q.evidence]
        sample = with_evidence[:ECHO_RECALL_MAX_QUESTIONS]
        report = map_evidence(sample, index.chunks)
        recall = echo_recall(index, sample, [ECHO_RECALL_K])[f"recall@{ECHO_RECALL_K}"]
        figure = {
            "index_prefix": prefix,
            "k": ECHO_RECALL_K,
            "recall": recall if sample else None,
            "questions": len(questions),
            "with_evidence": len(with_evidence),
            "measured": len(sample),
            "evidence_mapped": report.mapped,
            "evidence_total": report.total,
            "measured_at": timezone.now().isoformat(),
        }
        QuestionSet.objects.filter(pk=question_set.pk).update(echo_recall=figure)
        measured[question_set.pk] = figure
    return measured
