"""The sealed corpora (`datasets/open-licenses`, scored once; `datasets/gnu-manuals`, kept for
the next frozen preset): the seal holds, and each set is well made (its questions load, every
golden passage is copied from the page it cites and maps to chunks of its own document).
Loading the questions to check their form scores nothing, so the tests name the folder in
SLEUTH_UNSEAL; they run no baseline and no model on them."""

import gzip
import hashlib
import json
import runpy
from collections import Counter
from pathlib import Path

import pytest

from engine.documents.corpus import build_corpus
from engine.documents.evidence import map_evidence
from engine.documents.questions import SealedQuestionsError, load_questions, split_by_entity

DATASETS = Path(__file__).resolve().parents[2] / "datasets"


@pytest.fixture(params=["open-licenses", "gnu-manuals"])
def folder(request) -> Path:
    return DATASETS / request.param


def pages(folder: Path) -> list[dict]:
    with gzip.open(folder / "pages.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


@pytest.fixture
def questions(folder, monkeypatch):
    monkeypatch.setenv("SLEUTH_UNSEAL", folder.name)
    return load_questions(folder / "questions.jsonl")


def test_the_questions_are_sealed_and_unchanged_since(folder, monkeypatch):
    monkeypatch.delenv("SLEUTH_UNSEAL", raising=False)
    with pytest.raises(SealedQuestionsError, match=f"SLEUTH_UNSEAL={folder.name}"):
        load_questions(folder / "questions.jsonl")
    digest = hashlib.sha256((folder / "questions.jsonl").read_bytes()).hexdigest()
    assert f"questions.jsonl sha256: {digest}" in (folder / "SEALED").read_text()


def test_the_set_is_spread_over_entities_for_folds(questions):
    entities = Counter(q.entity for q in questions)
    assert len(questions) >= 70 and len(entities) >= 8
    assert max(entities.values()) <= 0.3 * len(questions)
    train, val = split_by_entity(questions, val_fraction=0.5, seed=0)
    assert {q.entity for q in train}.isdisjoint({q.entity for q in val})


def test_every_evidence_passage_is_copied_from_one_page_of_one_document(folder, questions):
    by_page = {(p["doc"], p["page"]): p["text"] for p in pages(folder)}
    entity_of = {p["doc"]: p["entity"] for p in pages(folder)}
    for q in questions:
        assert q.answer.strip() and q.evidence, q.id
        for ev in q.evidence:
            assert ev.text in by_page[(ev.doc, ev.page)], q.id
            assert entity_of[ev.doc] == q.entity, q.id
            holders = {doc for (doc, _), text in by_page.items() if ev.text in text}
            assert holders == {ev.doc}, q.id


def test_every_evidence_passage_maps_to_chunks_of_its_own_document(folder, questions):
    corpus = build_corpus([folder / "pages.jsonl.gz"])
    assert not corpus.errors
    report = map_evidence(questions, corpus.chunks)
    assert report.mapped == report.total, report.summary()
    doc_of = {c.id: c.doc for c in corpus.chunks}
    for q in questions:
        assert {doc_of[c] for c in q.golden_chunk_ids} == {ev.doc for ev in q.evidence}, q.id


def test_build_script_regenerates_the_committed_pages(folder, tmp_path):
    build = runpy.run_path(str(folder / "build.py"))
    out = tmp_path / "pages.jsonl.gz"
    build["main"](folder / "texts", out)
    assert out.read_bytes() == (folder / "pages.jsonl.gz").read_bytes()
