"""The python-reference development corpus: its questions load, every golden passage is
copied from the page it cites and maps to chunks of its own entity, and no text is
shared between entities (so an entity fold holds out all of its text)."""

import gzip
import json
import runpy
from collections import Counter
from pathlib import Path

import pytest

from engine.documents.corpus import build_corpus
from engine.documents.evidence import map_evidence
from engine.documents.questions import load_questions, split_by_entity

FOLDER = Path(__file__).resolve().parents[2] / "datasets" / "python-reference"
PAGES = FOLDER / "pages.jsonl.gz"


def pages() -> list[dict]:
    with gzip.open(PAGES, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="module")
def questions():
    return load_questions(FOLDER / "questions.jsonl")


def test_the_set_is_large_and_spread_enough_for_entity_folds(questions):
    entities = Counter(q.entity for q in questions)
    assert len(questions) >= 100
    assert len(entities) >= 40
    # No entity dominates: a fold that holds out the largest still leaves most questions.
    assert max(entities.values()) <= 0.1 * len(questions)
    train, val = split_by_entity(questions, val_fraction=0.25, seed=0)
    assert {q.entity for q in train}.isdisjoint({q.entity for q in val})


def test_every_question_is_answered_by_its_own_entity_s_document(questions):
    for q in questions:
        assert q.answer.strip() and q.evidence, q.id
        assert all(ev.doc == q.entity for ev in q.evidence), q.id


def test_every_evidence_passage_is_copied_from_the_page_it_cites(questions):
    by_page = {(p["doc"], p["page"]): p["text"] for p in pages()}
    for q in questions:
        for ev in q.evidence:
            assert ev.text in by_page[(ev.doc, ev.page)], q.id


def test_every_evidence_passage_maps_to_chunks_of_its_entity(questions):
    corpus = build_corpus([PAGES])
    assert not corpus.errors
    report = map_evidence(questions, corpus.chunks)
    assert report.mapped == report.total, report.summary()
    entity_of = {c.id: c.entity for c in corpus.chunks}
    for q in questions:
        assert q.golden_chunk_ids, q.id
        assert {entity_of[c] for c in q.golden_chunk_ids} == {q.entity}, q.id


def test_no_paragraph_is_in_two_documents():
    owners: dict[str, set[str]] = {}
    for page in pages():
        for paragraph in page["text"].split("\n\n"):
            if len(paragraph) >= 40:
                owners.setdefault(paragraph, set()).add(page["doc"])
    shared = {p[:60]: docs for p, docs in owners.items() if len(docs) > 1}
    assert not shared


def test_pages_are_cut_at_paragraphs_near_two_thousand_characters():
    for page in pages():
        # Only a paragraph longer than a page on its own makes a page longer.
        if len(page["text"]) > 2000:
            assert "\n\n" not in page["text"], (page["doc"], page["page"])


SOURCE = Path("/usr/lib/python3.11/pydoc_data/topics.py")


@pytest.mark.skipif(not SOURCE.exists(), reason="Python 3.11's pydoc_data is not on this machine")
def test_build_script_regenerates_the_committed_pages(tmp_path):
    build = runpy.run_path(str(FOLDER / "build.py"))
    out = tmp_path / "pages.jsonl.gz"
    build["main"](SOURCE, out)
    assert out.read_bytes() == PAGES.read_bytes()
