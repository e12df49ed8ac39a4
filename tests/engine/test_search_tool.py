"""What the agent reads of a hit: an equal share of the results per hit, and of a hit too
long for its share, its lines that hold the query's words."""

from dataclasses import dataclass

from engine.agent.tool import fit_hits
from engine.search.tool import excerpt

STATEMENT = "\n".join(
    [
        "CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)",
        "Net income 5,921 4,858",
        "Depreciation and amortization 1,488 1,544",
        "Changes in working capital (300) 120",
        "Purchases of property, plant and equipment (1,577) (1,373)",
        "Proceeds from sale of businesses 88 14",
        "Dividends paid (3,193) (3,089)",
    ]
)


@dataclass
class Hit:
    chunk_id: str
    doc: str
    page: int | None
    text: str


def chars(text: str) -> list[str]:
    return list(text)


def test_a_long_hit_shows_its_first_line_and_the_rows_holding_the_query_words():
    def fits(text):
        return len(text.split("\n")) <= 4

    shown = excerpt(STATEMENT, "[3M 2018 | flows] purchases of property", fits)
    assert shown.split("\n") == [
        "CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)",
        "…",
        "Purchases of property, plant and equipment (1,577) (1,373)",
        "…",
    ]
    # The scope's words ("flows") are not the query's: only the row is sought.
    assert excerpt(STATEMENT, "[3M | flows] dividends", fits).split("\n") == [
        "CONSOLIDATED STATEMENTS OF CASH FLOWS (in millions)",
        "Net income 5,921 4,858",
        "…",
        "Dividends paid (3,193) (3,089)",
    ]


def test_with_room_left_the_rest_follows_in_the_pages_order():
    def fits(text):
        return len(text) <= 200

    shown = excerpt(STATEMENT, "dividends", fits)
    lines = shown.split("\n")
    assert lines[0].startswith("CONSOLIDATED") and "Dividends paid (3,193) (3,089)" in lines
    order = [STATEMENT.split("\n").index(line) for line in lines if line != "…"]
    assert order == sorted(order) and len(shown) <= 200
    # With no word of the query in any row, the hit reads from its top, as before.
    assert excerpt(STATEMENT, "zeppelin", fits).startswith(STATEMENT[:60])


def test_when_no_line_fits_the_text_is_left_to_be_cut():
    assert excerpt(STATEMENT, "dividends", lambda text: False) == STATEMENT


def test_fit_hits_shows_each_long_hit_by_the_query_within_its_share():
    hits = [Hit("d:p1:c0", "d", 1, STATEMENT), Hit("d:p2:c0", "d", 2, "Short note.")]
    body, shown, truncated = fit_hits(hits, 260, chars, "dividends paid")
    text = "".join(body)
    assert shown == ["d:p1:c0", "d:p2:c0"] and truncated
    assert "Dividends paid (3,193) (3,089)" in text and "Short note." in text
    first = text.split("\n\n")[0]
    assert len(first) <= (260 - 2) // 2 and first.startswith("[d:p1:c0] d | page 1\nCONSOLIDATED")
    # Room for everything: nothing is cut or left out.
    body, _, truncated = fit_hits(hits, 2000, chars, "dividends paid")
    assert STATEMENT in "".join(body) and not truncated
