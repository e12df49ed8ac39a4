"""The filings pack's habits of the scripted teacher: the latest year a question names, and a
financial statement named by any of its names."""

from engine.packs.filings.teaching import latest_year, statement_named
from engine.search.index import tokenize


def test_the_scope_s_year_is_the_latest_the_question_names():
    assert latest_year("Did 3M's capex grow between FY2021 and FY2022?") == ["2022"]
    assert latest_year("What was 3M's 2018 capex, against 2016's?") == ["2018"]
    assert latest_year("What does the descaling program remove?") == []


def test_a_statement_is_found_under_the_name_its_heading_gives_it():
    income = set(tokenize("Consolidated Statements of Income"))
    words, reading = statement_named("What was Acme's margin in the P&L statement?", income)
    assert words == ["p&l", "statement"]
    assert reading <= income
    balance = set(tokenize("Consolidated Balance Sheets"))
    assert statement_named("Which assets are on the statements of financial position?", balance)
    # Named, but not the statement this heading holds; or named by no statement's name.
    assert statement_named("What was Acme's margin in the P&L statement?", balance) is None
    assert statement_named("What does the descaling program remove?", income) is None
