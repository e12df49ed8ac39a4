"""Evidence mapping: find the chunks that contain each golden reference passage.

Passages and chunks are compared as character shingles of their letters and digits
only, so whitespace, line breaks, split words ("Flow s") and dropped punctuation from
PDF extraction do not matter. A passage maps to the fewest chunks that together cover
most of it (a page-long passage spans several chunks), plus every other chunk that holds
nearly all of it on its own (chunks overlap).

Candidates are searched from near to far: the cited page of the cited document, its
neighbouring pages (page numbering is often off by one), the whole document, and
finally the whole corpus through BM25.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePath

from engine.documents.chunking import Chunk
from engine.documents.questions import Question

SHINGLE = 8
MIN_COVERAGE = 0.6  # share of the passage the chosen chunks must hold to count as mapped
FULL_CONTAINMENT = 0.85  # a chunk holding this share of a passage on its own "contains" it
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


@dataclass
class Unmapped:
    question_id: str
    evidence_index: int
    coverage: float  # the best share of the passage any set of chunks held
    reason: str


@dataclass
class EvidenceReport:
    total: int = 0
    mapped: int = 0
    unmapped: list[Unmapped] = field(default_factory=list)

    @property
    def mapped_share(self) -> float:
        return self.mapped / self.total if self.total else 0.0

    def summary(self) -> str:
        lines = [f"evidence mapped: {self.mapped}/{self.total} ({self.mapped_share:.1%})"]
        for u in self.unmapped:
            lines.append(f"  {u.question_id} evidence {u.evidence_index}: {u.reason}")
        return "\n".join(lines)


def doc_key(name: str | None) -> str:
    """Documents match by file stem, case-insensitively ("3M_2018_10K.pdf" ~ "3m_2018_10k")."""
    if not name:
        return ""
    stem = PurePath(name).name
    # A file extension starts with a letter ("pdf", "md", "docx"); a version does not
    # ("LGPL-2.1" and "LGPL-2" are two documents).
    if "." in stem and re.fullmatch(r"[A-Za-z][A-Za-z0-9]{0,4}", stem.rsplit(".", 1)[1]):
        stem = stem.rsplit(".", 1)[0]
    return stem.lower()


def shingles(text: str) -> set[str]:
    flat = _NON_ALNUM.sub("", text.lower())
    if len(flat) <= SHINGLE:
        return {flat} if flat else set()
    return {flat[i : i + SHINGLE] for i in range(len(flat) - SHINGLE + 1)}


class _Corpus:
    """Chunks grouped for candidate lookup, with shingles computed once per chunk."""

    def __init__(self, chunks: list[Chunk], index=None):
        self.chunks = chunks
        self.by_doc: dict[str, list[Chunk]] = {}
        for c in chunks:
            self.by_doc.setdefault(doc_key(c.doc), []).append(c)
        self._shingles: dict[str, set[str]] = {}
        self._index = index

    def shingles(self, chunk: Chunk) -> set[str]:
        s = self._shingles.get(chunk.id)
        if s is None:
            s = self._shingles[chunk.id] = shingles(chunk.text)
        return s

    def searched(self, text: str, k: int = 30) -> list[Chunk]:
        if self._index is None:
            from engine.search.index import SearchIndex  # search builds on documents

            self._index = SearchIndex.build(self.chunks)
        query = " ".join(text.split()[:200])
        return [self._index.chunk(h.chunk_id) for h in self._index.search(query, k=k)]


def map_evidence(questions: list[Question], chunks: list[Chunk], index=None) -> EvidenceReport:
    """Fill each Evidence.chunk_ids and Question.golden_chunk_ids; report what did not map.
    `index`, a SearchIndex.build(chunks) the caller already holds (default parameters), spares
    building the same one again for the evidence the documents' own pages do not hold."""
    corpus = _Corpus(chunks, index)
    report = EvidenceReport()
    for q in questions:
        golden: list[str] = []
        for i, ev in enumerate(q.evidence):
            report.total += 1
            ids, coverage = _map_one(ev.text, ev.doc, ev.page, corpus)
            ev.chunk_ids = ids
            if ids:
                report.mapped += 1
                golden.extend(c for c in ids if c not in golden)
            else:
                where = f" in {ev.doc}" if ev.doc else ""
                if ev.doc and doc_key(ev.doc) not in corpus.by_doc:
                    reason = f"document {ev.doc!r} is not in the corpus"
                else:
                    reason = f"no chunks{where} hold it (best coverage {coverage:.0%})"
                report.unmapped.append(Unmapped(q.id, i, coverage, reason))
        q.golden_chunk_ids = golden
    return report


def _map_one(text: str, doc: str | None, page: int | None, corpus: _Corpus):
    target = shingles(text)
    if not target:
        return [], 0.0
    in_doc = corpus.by_doc.get(doc_key(doc), []) if doc else []
    tiers = []
    if in_doc and page is not None:
        tiers.append([c for c in in_doc if c.page == page])
        tiers.append([c for c in in_doc if c.page is not None and abs(c.page - page) <= 1])
    if in_doc:
        tiers.append(in_doc)
    tiers.append(corpus.searched(text))
    best = 0.0
    for candidates in tiers:
        ids, coverage = _cover(target, candidates, corpus)
        best = max(best, coverage)
        if coverage >= MIN_COVERAGE:
            return ids, coverage
    return [], best


def _cover(target: set[str], candidates: list[Chunk], corpus: _Corpus):
    overlaps = []
    for c in candidates:
        n = len(target & corpus.shingles(c))
        if n:
            overlaps.append((n, c))
    overlaps.sort(key=lambda x: (-x[0], x[1].id))
    covered: set[str] = set()
    chosen: list[str] = []
    for n, c in overlaps:
        own = corpus.shingles(c)
        gain = target & own - covered
        # A chunk joins if it adds a real part of the passage, or lies mostly inside it
        # (a long passage split over many small chunks).
        if len(gain) >= max(1, 0.05 * len(target)) or len(gain) >= 0.5 * len(own):
            covered |= gain
            chosen.append(c.id)
        elif n >= FULL_CONTAINMENT * len(target):
            chosen.append(c.id)
    coverage = len(covered) / len(target)
    return sorted(chosen), coverage
