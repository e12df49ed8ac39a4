"""The BM25 index: ranking, determinism, filters, persistence, and the tool text."""

import json

import pytest

from engine.packs.filings.names import reading_statement_names
from engine.search.index import SearchIndex, mend_split_letters, tokenize
from engine.search.tool import format_hits_for_model
from tests.helpers.search import AMERICANS, chunk

CHUNKS = [
    chunk("d1:p1:c0", "Revenue grew because of strong widget sales."),
    chunk(
        "d1:p2:c0", "Capital expenditures were purchases of property, plant and equipment.", page=2
    ),
    chunk("d2:p1:c0", "The weather was pleasant.", doc="d2", entity="Beta"),
    chunk("d2:p2:c0", "Widget revenue rose.", doc="d2", page=2, entity="Beta"),
]


@pytest.fixture(scope="module")
def index():
    return SearchIndex.build(CHUNKS)


def test_tokenize_stems_and_drops_stopwords():
    assert tokenize("The purchases of equipment") == ["purchas", "equip"]


def test_figures_are_not_words_but_whole_numbers_are():
    # "5,363" split into "5" and "363" matched nothing a question asks and lengthened the
    # pages made of figures; a year or a code is a word a question does ask.
    assert tokenize("Revenue 5,363 and 27.2 in 2018, error 404") == [
        "revenu",
        "2018",
        "error",
        "404",
    ]


def test_a_period_written_fy2019_is_read_as_its_letters_and_its_year():
    # Questions write "FY2019" and "Q2"; filings and document names write the year alone.
    assert tokenize("FY2019 capex in Q2, 10-K 3M") == [
        "fy",
        "2019",
        "capex",
        "q",
        "2",
        "10",
        "k",
        "3",
        "m",
    ]
    # An index of an older format reads words as it was built.
    assert tokenize("FY2019 capex", format_version=2) == ["fy2019", "capex"]


def test_a_question_s_fy_year_finds_the_filing_of_that_year():
    docs = [
        chunk("a18", "revenue by segment", doc="ACME_2018_10K"),
        chunk("a19", "revenue by segment", doc="ACME_2019_10K"),
    ]
    index = SearchIndex.build(docs)
    assert [h.chunk_id for h in index.search("FY2019 revenue by segment", k=1)] == ["a19"]


def test_a_page_heading_finds_every_chunk_of_its_page():
    statement = "CONSOLIDATED STATEMENTS OF CASH FLOWS\nNet income 1,200 1,100"
    pages = [
        chunk("d1:p2:c0", statement, page=2),
        chunk("d1:p2:c1", "Purchases of property and equipment (1,577) (1,373)", page=2),
        chunk("d1:p9:c0", "Purchases of property are described in Note 4.", page=9),
    ]
    index = SearchIndex.build(pages)
    found = [h.chunk_id for h in index.search("cash flows purchases of property", k=3)]
    # The statement's second chunk names no cash flow itself: its page's heading does, so it
    # outranks the note that only shares its row's words.
    assert found[0] == "d1:p2:c1"
    assert set(found) == {"d1:p2:c1", "d1:p2:c0", "d1:p9:c0"}


def test_best_matching_chunk_comes_first(index):
    hits = index.search("purchasing equipment", k=3)
    assert hits[0].chunk_id == "d1:p2:c0"
    assert (hits[0].doc, hits[0].page, hits[0].entity) == ("d1", 2, "Acme")


def test_chunks_sharing_no_word_with_the_query_are_not_returned(index):
    assert [h.chunk_id for h in index.search("weather", k=10)] == ["d2:p1:c0"]
    assert index.search("zeppelin", k=10) == []


def test_equal_scores_are_ordered_by_chunk_id():
    twins = [chunk(f"c{i}", "identical text about widgets") for i in (3, 1, 2)]
    hits = SearchIndex.build(twins).search("widgets", k=3)
    assert [h.chunk_id for h in hits] == ["c1", "c2", "c3"]


def test_filters_restrict_results(index):
    assert {h.entity for h in index.search("widget revenue", k=5, filters={"entity": "Beta"})} == {
        "Beta"
    }
    hits = index.search("widget revenue", k=5, filters={"doc": ["d1"], "page": 1})
    assert [h.chunk_id for h in hits] == ["d1:p1:c0"]


def test_a_bracketed_scope_searches_only_the_documents_it_names():
    docs = [
        chunk("a18", "capital expenditure 100", doc="3M_2018_10K", entity="3M"),
        chunk("a22", "capital expenditure 100 capital", doc="3M_2022_10K", entity="3M"),
        chunk("j21", "capital expenditure capital expenditure", doc="JPMORGAN_2021Q1_10Q"),
    ]
    index = SearchIndex.build(docs)

    def found(query):
        return [h.chunk_id for h in index.search(query, k=3)]

    assert found("capital expenditure") == ["j21", "a22", "a18"]
    assert found("[3M 2018] capital expenditure") == ["a18"]
    assert found("[3m] capital expenditure") == ["a22", "a18"]
    # Each scope word starts a word of the name: "jpm" names JPMORGAN, "2021" names 2021Q1.
    assert found("[jpm 2021] capital expenditure") == ["j21"]
    assert index.documents_named("Acme") == ["JPMORGAN_2021Q1_10Q"]  # its entity
    # No 3M filing of 2019: the scope's longest leading part that names documents is used.
    assert found("[3M 2019] capital expenditure") == found("[3M] capital expenditure")
    # A scope that names no document searches everything; the scope's words are not searched.
    assert found("[Initech 2018] capital expenditure") == found("capital expenditure")
    assert found("[3M 2018]") == []


def test_a_scope_names_a_company_through_an_abbreviation_or_one_typo():
    docs = [
        chunk("ax", "card member loans", doc="AMERICANEXPRESS_2022_10K", entity="American Express"),
        chunk(
            "aw",
            "card member loans",
            doc="AMERICANWATERWORKS_2022_10K",
            entity="American Water Works",
        ),
        chunk("ul", "card member loans", doc="ULTABEAUTY_2023Q4_EARNINGS", entity="Ulta Beauty"),
        chunk("pe", "card member loans", doc="PEPSICO_2022_10K", entity="PepsiCo"),
    ]
    index = SearchIndex.build(docs)
    named = index.documents_named
    assert named("AMEX 2022") == ["AMERICANEXPRESS_2022_10K"]  # "am" + "ex"
    assert named("Ultra Beauty 2023") == ["ULTABEAUTY_2023Q4_EARNINGS"]  # one letter more
    assert named("Pespico 2022") == ["PEPSICO_2022_10K"]  # two letters swapped
    # A name that starts a word is read exactly, before any loose reading ("ameri" would be
    # one typo from nothing here, but starts both Americans).
    assert named("Ameri 2022") == ["AMERICANEXPRESS_2022_10K", "AMERICANWATERWORKS_2022_10K"]
    # Short words and numbers are read exactly: "Bep" and "Pep" are one letter apart, and a
    # year one digit off is another year.
    assert named("Bep 2022") == []
    assert named("Ulta 2024") == ["ULTABEAUTY_2023Q4_EARNINGS"]  # the leading part, as before
    assert named("Initech 2022") == []
    assert [h.chunk_id for h in index.search("[Ultra Beauty 2023] card member loans", k=4)] == [
        "ul"
    ]


def test_a_word_names_a_company_by_its_entity_not_its_documents_name():
    docs = [
        chunk("ax", "card member loans", doc="AMERICANEXPRESS_2022_10K", entity="American Express"),
        chunk("pe", "card member loans", doc="PEPSICO_2022_10K", entity="PepsiCo"),
        chunk("x", "card member loans", doc="ANNUAL_REPORT_2021"),  # no entity
    ]
    index = SearchIndex.build(docs)
    assert all(index.names_company(w) for w in ["pepsico", "Pep", "amex", "express", "pespico"])
    assert not any(
        index.names_company(word)
        for word in ["2022", "10k", "annual", "fy2022", "ebitda", "capex", "pepsicola"]
    )


def test_a_scope_naming_several_companies_searches_those_the_question_names():
    """proof78's student shortened "American Express" to "[AMER 2022]", which names American
    Water Works too: searched for a question naming one of them, the scope searches its."""
    index = SearchIndex.build(AMERICANS)

    def found(query, question=""):
        return sorted(h.chunk_id for h in index.search(query, k=3, question=question))

    express = "Which debt securities are registered under American Express' name?"
    water = "Did American Water Works register any debt securities in 2022?"
    assert found("[AMER 2022] debt securities") == ["aw", "ax"]  # no question: as written
    assert found("[AMER 2022] debt securities", express) == ["ax"]
    assert found("[AMER 2022] debt securities", water) == ["aw"]
    assert found("[AM 2022] debt securities", water) == ["aw"]
    # A question naming neither, or a scope naming one company, is searched as written.
    assert found("[AMER 2022] debt securities", "Which debt securities does Amcor list?") == [
        "aw",
        "ax",
    ]
    assert found("[Amcor 2022] debt securities", express) == ["am"]
    assert found("debt securities", express) == ["am", "aw", "ax"]


def test_the_companies_a_question_names_are_its_narrowest_reading():
    index = SearchIndex.build(AMERICANS)
    asked = index.companies_asked
    assert asked("Was American Express able to retain card members?") == {"American Express"}
    assert asked("Does AMEX have an improving margin?") == {"American Express"}
    assert asked("What did American Water Works pay?") == {"American Water Works"}
    assert asked("Which American company paid more?") == {
        "American Express",
        "American Water Works",
    }
    assert asked("Compare Amcor's and American Express's debt") == {"Amcor", "American Express"}
    assert asked("What drove the reduction in SG&A expense in FY2023?") == frozenset()


COMMON_WORD_NAMES = [
    chunk("bb", "cash flows", doc="BESTBUY_2023_10K", entity="Best Buy"),
    chunk("bl", "cash flows", doc="BLOCK_2020_10K", entity="Block"),
    chunk("gm", "cash flows", doc="GENERALMILLS_2022_10K", entity="General Mills"),
    chunk("ba", "cash flows", doc="BOEING_2022_10K", entity="Boeing"),
]


def test_a_company_named_by_a_common_word_is_asked_only_where_written_as_a_name():
    """Questions say "to the best of your abilities" and "selling, general and
    administrative": beside a company written as a name, those words name no Best Buy or
    General Mills; a question with no capitalised company word is read whole."""
    asked = SearchIndex.build(COMMON_WORD_NAMES).companies_asked
    block = (
        "Using the cash flow statement, answer the following question to the best of your "
        "abilities: how much did Block (formerly known as Square) generate in FY2020?"
    )
    assert asked(block) == {"Block"}
    assert asked("What is Boeing's selling, general and administrative expense?") == {"Boeing"}
    assert asked("What did Best Buy and General Mills spend?") == {"Best Buy", "General Mills"}
    assert asked("what did block and boeing spend on general expenses?") == {
        "Block",
        "Boeing",
        "General Mills",
    }
    assert asked("What drove the reduction in SG&A expense in FY2023?") == frozenset()


def test_a_scope_year_the_query_does_not_name_searches_the_later_years_it_names_too():
    docs = [
        chunk("k22", "revolving credit agreement", doc="PEPSICO_2022_10K", entity="PepsiCo"),
        chunk("k23", "revolving credit agreement", doc="PEPSICO_2023_8K", entity="PepsiCo"),
        chunk("k21", "revolving credit agreement", doc="PEPSICO_2021_10K", entity="PepsiCo"),
        chunk("x23", "revolving credit agreement", doc="ACME_2023_10K", entity="Acme"),
    ]
    index = SearchIndex.build(docs)

    def found(query):
        return sorted(h.chunk_id for h in index.search(query, k=4))

    # The student copied 2022 where the question says 2023: both years' filings, no other
    # company's and no other year's.
    assert found("[Pepsico 2022] As of May 26, 2023, what is the revolving credit agreement?") == [
        "k22",
        "k23",
    ]
    assert found("[Pepsico 2022] revolving credit agreement in FY2023") == ["k22", "k23"]
    # A scope year the query holds, an earlier one (the scope's filing reports it too), or a
    # query naming none, keeps to the scope's year.
    assert found("[Pepsico 2022] revolving credit agreement in 2022") == ["k22"]
    assert found("[Pepsico 2023] revolving credit agreement, FY2021 - FY2023") == ["k23"]
    assert found("[Pepsico 2022] revolving credit agreement") == ["k22"]
    # A scope with no year is not narrowed or widened by the query's years.
    assert found("[Pepsico] revolving credit agreement in 2023") == ["k21", "k22", "k23"]
    assert index.documents_scoped("Pepsico 2022", "between 2021 and 2023") == [
        "PEPSICO_2022_10K",
        "PEPSICO_2023_8K",
    ]


def test_words_after_a_bar_keep_the_pages_whose_heading_holds_them():
    opening = "Management's discussion and analysis of financial condition and results of "
    opening += "operations: liquidity and capital resources, an overview of the year. "
    prose = (
        opening + "We discuss the consolidated statements of cash flows and capital expenditure."
    )
    docs = [
        chunk("3M:p1:c0", f"3M Company. {prose}", doc="3M", page=1),
        chunk(
            "3M:p2:c0",
            "3M Company. Consolidated Statement of Cash Flows. Purchases of property 1,577",
            doc="3M",
            page=2,
        ),
        # The statement's second chunk: the page's heading is in its first.
        chunk("3M:p2:c1", "Proceeds from sale of businesses 512 capital", doc="3M", page=2),
        chunk("3M:p3:c0", "3M Company. Consolidated Balance Sheet. Total assets", doc="3M", page=3),
        chunk(
            "AB:p9:c0",
            "Adobe Inc. Consolidated Statements of Cash Flows. Purchases 400",
            doc="ADOBE",
            page=9,
            entity="Adobe",
        ),
    ]
    index = SearchIndex.build(docs)

    def found(query, k=3):
        return [h.chunk_id for h in index.search(query, k=k)]

    # Prose that names the statement outranks the statement itself: mostly numbers.
    assert found("[3M] consolidated statement cash flows capital expenditure", k=1) == ["3M:p1:c0"]
    # Within the pages headed "cash", the words rank them, and pages share none still come.
    assert found("[3M | cash] capital expenditure") == ["3M:p2:c1", "3M:p2:c0"]
    assert found("[3M | cash flows]", k=1) == ["3M:p2:c0"]
    assert sorted(found("[ | cash flows] purchases")) == ["3M:p2:c0", "3M:p2:c1", "AB:p9:c0"]
    # A page filter no page passes is dropped, as a scope that names nothing is.
    assert found("[3M | leases] total assets") == found("[3M] total assets")
    assert found("[3M | leases]") == []


def test_the_pages_a_heading_line_titles_come_before_those_it_only_opens_on():
    # A filter written short ("cash flow" for "the cash flow statement") keeps the prose page
    # that opens on cash flows too; the query's words alone would rank the prose first.
    prose = "Table of Contents\nOther cash flows in the statement include capital "
    prose += "expenditure on plants and the capital expenditure of acquired businesses."
    statement = "Table of Contents\n3M Company and Subsidiaries\nConsolidated Statement of "
    statement += "Cash Flows\nYears ended December 31\nPurchases of property, plant 1,577"
    docs = [
        chunk("3M:p1:c0", prose, doc="3M", page=1),
        chunk("3M:p2:c0", statement, doc="3M", page=2),
        chunk("3M:p2:c1", "Proceeds from sale of businesses 512", doc="3M", page=2),
        chunk(
            "3M:p3:c0",
            "Table of Contents\nCash Flows:\nCapital expenditure 1,577",
            doc="3M",
            page=3,
        ),
    ]
    index = SearchIndex.build(docs)

    def found(query, k=4):
        return [h.chunk_id for h in index.search(query, k=k)]

    # The statement ("Consolidated Statement of Cash Flows": four words) and a section titled
    # "Cash Flows:" come first, the words ranking each group; the prose last.
    assert found("[3M | cash flow] capital expenditure") == [
        "3M:p3:c0",
        "3M:p2:c0",
        "3M:p2:c1",
        "3M:p1:c0",
    ]
    # The whole name keeps the prose that holds it too, and titles the statement alone.
    assert found("[3M | cash flow statement] capital expenditure") == [
        "3M:p2:c0",
        "3M:p2:c1",
        "3M:p1:c0",
    ]
    # The words alone would rank the prose before the statement, which names no capital
    # expenditure.
    score = {h.chunk_id: h.score for h in index.search("[3M | cash flow] capital expenditure", 4)}
    assert score["3M:p1:c0"] > score["3M:p2:c0"]


def test_a_page_filter_reads_a_letter_a_pdf_split_off_a_heading_word_joined_back():
    # pypdfium2's text of 3M's 2018 balance sheet: "Consolidated Balance Shee t".
    assert mend_split_letters("Consolidated Balance Shee t\nCash Flow s, net") == (
        "Consolidated Balance Sheet\nCash Flows, net"
    )
    for whole in ("Schedule a of Form 10-K, Item 7 b", "Plan b", "Note x", "Leases c) Other"):
        assert mend_split_letters(whole) == whole
    docs = [
        chunk(
            "3M:p1:c0", "Table of Contents\nConsolidated Balance Shee t\nProperty 8,738", doc="3M"
        ),
        chunk(
            "3M:p2:c0",
            "Table of Contents\nNOTE 7. Supplemental Balance Sheet Information\n"
            "Accounts payable included as a separate line item",
            doc="3M",
            page=2,
        ),
    ]
    index = SearchIndex.build(docs)
    assert [h.chunk_id for h in index.search("[3M | balance sheet] year end", k=2)] == [
        "3M:p1:c0",  # titled, as "Consolidated Balance Sheet"
        "3M:p2:c0",
    ]


def test_the_filings_pack_reads_a_filter_naming_a_statement_under_its_other_names():
    # Questions ask for "the statement of financial position" and "the P&L statement";
    # filings head those pages "Consolidated Balance Sheets", "Statements of Operations".
    docs = [
        chunk("W:p1:c0", "Walmart Inc.\nConsolidated Balance Sheets\nAccounts payable 46,092"),
        chunk("W:p2:c0", "Walmart Inc.\nConsolidated Statements of Operations\nRevenue", page=2),
        chunk("W:p3:c0", "Liquidity\nOur financial position: accounts payable rose", page=3),
        chunk("W:p4:c0", "Notes\nIncome taxes on the statement of income", page=4),
    ]
    index = reading_statement_names(SearchIndex.build(docs))

    def found(query):
        return [h.chunk_id for h in index.search(query, k=4)]

    assert found("[Walmart | statement of financial position] accounts payable") == ["W:p1:c0"]
    assert found("[Walmart | balance sheet] accounts payable") == ["W:p1:c0"]
    # Every income statement's name finds both pages a filing may call so, titles first.
    for name in ("P&L statement", "income statement", "statement of earnings"):
        assert found(f"[Walmart | {name}] revenue") == ["W:p2:c0", "W:p4:c0"], name
    # A filter naming no statement is read as written: "income" alone is no statement.
    assert found("[Walmart | income] revenue") == ["W:p4:c0"]
    # Without the filings pack's names, a filter is read as written: the statement of
    # operations is no "income statement".
    plain = SearchIndex.build(docs)
    assert [h.chunk_id for h in plain.search("[Walmart | income statement] revenue", k=4)] == [
        "W:p4:c0"
    ]


def test_within_a_scope_words_are_weighed_by_their_rarity_among_the_scoped_chunks():
    # "widget" is rare in the index but in every 3M chunk; "capex" is everywhere else but in
    # one 3M chunk: inside the 3M scope, only "capex" tells the chunks apart.
    docs = [
        chunk("a1", "widget widget widget widget report", doc="3M_2018_10K", entity="3M"),
        chunk("a2", "widget capex report", doc="3M_2018_10K", entity="3M", page=2),
        chunk("a3", "widget report", doc="3M_2018_10K", entity="3M", page=3),
        *(chunk(f"x{i:02}", "capex plan", doc="OTHER_2018", entity="Other") for i in range(12)),
    ]
    index = SearchIndex.build(docs)
    # A plain filter keeps the whole index's weights: the chunk full of "widget" wins.
    filtered = index.search("widget capex", k=3, filters={"doc": "3M_2018_10K"})
    assert [h.chunk_id for h in filtered][0] == "a1"
    scoped = index.search("[3M] widget capex", k=3)
    assert [h.chunk_id for h in scoped] == ["a2", "a1", "a3"]


def test_unknown_filter_is_an_error(index):
    with pytest.raises(ValueError, match="unknown filter"):
        index.search("widget", filters={"color": "red"})


def test_saved_index_loads_and_searches_the_same(index, tmp_path):
    index.save(tmp_path / "idx")
    loaded = SearchIndex.load(tmp_path / "idx")
    assert len(loaded) == len(index) == 4
    assert loaded.search("widget revenue", k=4) == index.search("widget revenue", k=4)
    assert loaded.chunk("d2:p2:c0") == CHUNKS[3]


def test_an_index_of_an_older_format_still_loads_and_one_of_an_unknown_format_does_not(
    index, tmp_path
):
    # Agents published on a format-1 or -2 build keep working, their queries read as the
    # build was ("FY2020" one word); a format this release does not know is refused with what
    # to do.
    folder = index.save(tmp_path / "older")
    meta = json.loads((folder / "index.json").read_text())
    (folder / "index.json").write_text(json.dumps(meta | {"format_version": 1}))
    assert [h.chunk_id for h in SearchIndex.load(folder).search("widget revenue", k=2)] == [
        h.chunk_id for h in index.search("widget revenue", k=2)
    ]
    older = SearchIndex.build([chunk("f", "FY2020 widget revenue")])
    folder = older.save(tmp_path / "fy")
    meta = json.loads((folder / "index.json").read_text())
    (folder / "index.json").write_text(json.dumps(meta | {"format_version": 2}))
    # Built as format 3 ("fy", "2020"), read as format 2: "fy2020" is no word it holds.
    assert SearchIndex.load(folder).search("FY2020", k=1) == []
    assert [h.chunk_id for h in older.search("FY2020", k=1)] == ["f"]
    (folder / "index.json").write_text(json.dumps(meta | {"format_version": 99}))
    with pytest.raises(ValueError, match="rebuild it"):
        SearchIndex.load(folder)


def test_tool_text_shows_chunk_id_document_page_and_text(index):
    text = format_hits_for_model(index.search("capital expenditures", k=1), max_chars_per_hit=20)
    assert text.startswith("[d1:p2:c0] d1 | page 2\nCapital expenditures")
    assert text.endswith("…")


def test_tool_text_for_no_hits_says_so():
    assert "No results" in format_hits_for_model([])
