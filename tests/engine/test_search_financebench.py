"""The real FinanceBench filings: index the pages, map the golden evidence, and measure
the query-echo baseline (the numbers in the README)."""

from pathlib import Path

import pytest

from engine.documents.corpus import build_corpus
from engine.documents.evidence import map_evidence
from engine.documents.questions import load_questions
from engine.search.index import SearchIndex
from engine.search.recall import echo_recall

DATA = Path(__file__).parents[2].parent / "shared" / "datasets" / "financebench-dev"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not DATA.is_dir(), reason="shared/datasets/financebench-dev is absent"),
]


@pytest.fixture(scope="module")
def corpus():
    return build_corpus([DATA / "pages.jsonl.gz"])


@pytest.fixture(scope="module")
def index(corpus):
    """Built once: the evidence mapping searches it, and the echo baseline is measured on it."""
    return SearchIndex.build(corpus.chunks)


def test_every_page_file_document_is_chunked_with_its_company(corpus):
    assert not corpus.errors
    assert corpus.documents == 47
    assert {c.entity for c in corpus.chunks if c.doc == "3M_2018_10K"} == {"3M"}


def test_at_least_95_percent_of_golden_evidence_maps_to_chunks(corpus, index):
    questions = load_questions(DATA / "questions.jsonl")
    report = map_evidence(questions, corpus.chunks, index)
    assert report.total == 107
    assert report.mapped_share >= 0.95, report.summary()
    # The cash-flow statement page of 3M's 2018 10-K holds the capex evidence.
    capex = next(q for q in questions if q.id == "financebench_id_03029")
    assert any(c.startswith("3M_2018_10K:p60:") for c in capex.golden_chunk_ids)

    recall = echo_recall(index, questions, [1, 10])
    # The echo baseline is weak by nature (DESIGN: about 15% at 10) but not nothing.
    assert 0.05 <= recall["recall@10"] <= 0.5
    assert recall["recall@1"] <= recall["recall@10"]
