"""A filing's cash-flow statement as the engine's tests read it: a header row of years, then
rows of a label and one figure per year (tests/engine/test_documents_synthesis.py,
test_filings_questions.py)."""

from engine.documents.chunking import Section, chunk_sections

STATEMENT = """Acme Corp
Consolidated Statement of Cash Flows
(Millions) 2018 2017
Net income $5,363 $4,869
Purchases of property, plant and equipment (1,577) (1,373)
Other — net 9 (6)
"""
# The same table on three pages: a filing repeats its tables.
LONG_PAGES = [Section(STATEMENT * 3, page=p) for p in (1, 2, 3)]


def statement_chunks():
    """The statement as one page (60) of Acme's 2018 10-K."""
    return chunk_sections("ACME_2018_10K", [Section(STATEMENT, page=60)], entity="Acme")
