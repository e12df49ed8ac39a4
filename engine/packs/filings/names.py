"""The filings pack's names of a page: the names questions and filings give the same
financial statement (US GAAP's and IFRS's). A question asks for "the statement of financial
position" or "the P&L", a filing heads the page "Consolidated Balance Sheets" or
"Consolidated Statements of Operations": with the pack's `limits.statement_synonyms`, the
search tool reads a page filter naming a statement by one of its names under every other
(`reading_statement_names`), and the teacher's section search may write the name the question
gives (`teaching.statement_named`)."""

from engine.search.index import tokenize

STATEMENT_NAMES = (
    ("balance sheet", "statement of financial position", "statement of financial condition"),
    (
        "income statement",
        "statement of income",
        "statement of operations",
        "statement of earnings",
        "profit and loss",
        "p&l",
    ),
)
_STATEMENT_STEMS = [[frozenset(tokenize(name)) for name in names] for names in STATEMENT_NAMES]


def statement_readings(stems: list[str]) -> list[frozenset[str]]:
    """The stems a page filter may be read as: its own, and where it names a financial
    statement (`STATEMENT_NAMES`), each with that name swapped for the statement's others
    ("p&l statement": also "income statement", "statement of operations"…)."""
    readings = [frozenset(stems)]
    for names in _STATEMENT_STEMS:
        named = next((name for name in names if name <= readings[0]), None)
        if named is not None:
            readings = [r - named | other for r in readings for other in names]
    return list(dict.fromkeys(readings))


def reading_statement_names(tool):
    """`tool` with its page filters read under every name of the statement they name (a
    `SearchIndex`: `reading_filters`); a tool without page filters as it is."""
    reading_filters = getattr(tool, "reading_filters", None)
    return reading_filters(statement_readings) if reading_filters else tool
