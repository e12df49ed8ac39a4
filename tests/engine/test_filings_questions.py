"""The filings pack's synthesized questions: a cell of a year-column table, a yes/no
comparison of a row's two latest years, what drove a change a filing explains; asked first,
the generic kinds filling what they leave."""

import pytest

from engine.documents.chunking import Section, chunk_sections
from engine.documents.questions import Question
from engine.documents.synthesis import GENERIC_KINDS, offline_questions
from engine.packs import synthesized_questions
from engine.packs.filings.questions import (
    FILINGS_KINDS,
    asks_cause,
    cause_questions,
    mix_asked,
    table_facts,
)
from tests.helpers.filings import LONG_PAGES, statement_chunks

MANUAL = """Cleaning the machine
The descaling program removes limescale from the boiler and the pipes.
A grinder is a unit that crushes the beans just before brewing.
There are three brewing strengths on the control panel.
"""


def manual():
    return chunk_sections("BREWER_X1_MANUAL", [Section(MANUAL, page=4)], entity="Brewer X1")


def filings(pool, n=100, seed=0, **mix):
    """The filings pack's questions in the shares asked for (none: lookups only)."""
    shares = {"yes_no_share": 0.0, "cause_share": 0.0, "yes_share": 0.5, **mix}
    return synthesized_questions("filings", pool, n, seed, mix=shares)


def test_the_default_path_asks_nothing_of_a_filing_s_tables():
    # No pack: the generic kinds read sentences only, never a year-column table's cells.
    for made in (
        offline_questions(statement_chunks(), n=100),
        synthesized_questions("", statement_chunks(), 100),
    ):
        assert not {q.meta["source"] for q in made} & {f"offline-{k}" for k in FILINGS_KINDS}
    with pytest.raises(ValueError, match="unknown question kinds"):
        synthesized_questions("", statement_chunks(), 10, kinds=["table"])
    with pytest.raises(ValueError, match="unknown question kinds"):
        offline_questions(statement_chunks(), kinds=FILINGS_KINDS)


def test_the_pack_makes_nothing_of_a_manual_and_leaves_it_to_the_generic_kinds():
    assert synthesized_questions("filings", manual(), 10, kinds=FILINGS_KINDS) == []
    made = synthesized_questions("filings", manual(), 10)
    assert made and {q.meta["source"] for q in made} <= {f"offline-{k}" for k in GENERIC_KINDS}


def test_the_mix_follows_the_customer_s_own_questions():
    def asked(question, answer):
        return Question(id=question, question=question, answer=answer, entity="Acme", evidence=[])

    mix = mix_asked(
        [
            asked("Did Acme's revenue grow in 2018?", "Yes, it grew."),
            asked("Did Acme's capex fall in 2018?", "No."),
            asked("Did Acme's debt fall in 2018?", "Yes"),
            asked("What drove Acme's margin in 2018?", "Lower costs"),
        ]
    )
    assert mix == {"yes_no_share": 0.75, "cause_share": 0.25, "yes_share": 2 / 3}
    assert mix_asked([]) == {"yes_no_share": 0.0, "cause_share": 0.0, "yes_share": 0.5}
    # A run's customer questions all Yes or No: its synthesized table questions are too.
    tables = synthesized_questions(
        "filings", statement_chunks(), 10, asked=[asked("Did X rise?", "No")]
    )
    assert tables and all(q.answer == "No" for q in tables if q.meta["source"] != "offline-table")


MD_AND_A = """Results of operations
Marketing expense increased 8 percent, primarily due to business investments to drive
growth momentum. It increased primarily due to timing. table of Contents EXPENSES Total
expenses increased due to higher rewards costs. Interest income rose, driven by higher
average loan balances and interest rates, partially offset by lower yields. Revenue was
$5,000 million in 2022.
"""


def test_offline_questions_ask_for_one_table_cell_naming_entity_and_year():
    questions = filings(statement_chunks(), n=100)
    (q,) = [q for q in questions if "purchases of property, plant and equipment" in q.question]
    assert "Acme" in q.question and "2018" in q.question
    assert q.answer == "-1,577 million"
    assert q.golden_chunk_ids == ["ACME_2018_10K:p60:c0"]
    assert q.evidence[0].page == 60 and "(1,577)" in q.evidence[0].text
    assert ("Net income", "2017", "$4,869 million") in table_facts(statement_chunks()[0])


def test_a_lookup_carries_its_answer_as_the_row_says_it_and_a_comparison_none():
    (lookup,) = [
        q for q in filings(statement_chunks(), n=100) if "purchases of property" in q.question
    ]
    assert lookup.meta["quoted"] == "Purchases of property, plant and equipment (1,577) million"
    comparisons = filings(statement_chunks(), n=100, yes_no_share=1.0)
    assert comparisons and not any("quoted" in q.meta for q in comparisons)


def test_offline_questions_are_deterministic_and_capped():
    first = filings(statement_chunks(), n=2, seed=1)
    assert len(first) == 2
    assert [q.question for q in filings(statement_chunks(), n=2, seed=1)] == [
        q.question for q in first
    ]


def test_offline_questions_vary_their_shape_and_skip_table_debris():
    rows = "\n".join(f"Line item number {w} {i} {i + 1}" for i, w in enumerate("abcdefghijklmnop"))
    debris = "Cash and due from banks $27.2 $27.2 $ — 5 6\nTotal 7 8\n"
    text = f"Acme Corp\n(Millions) 2019 2018\n{debris}{rows}\n"
    questions = filings(
        chunk_sections("ACME_2019_10K", [Section(text, page=3)], entity="Acme"), n=100
    )
    openings = {q.question.split("Acme")[0] for q in questions}
    assert len(openings) >= 3, openings  # not one template
    assert not any("$" in q.question or "Total" in q.question for q in questions)


def test_offline_questions_count_every_copy_of_the_row_as_golden():
    pool = chunk_sections("ACME_2018_10K", LONG_PAGES, entity="Acme")
    for q in filings(pool, n=10):
        assert len(q.golden_chunk_ids) == 3  # the same table on three pages


def test_offline_comparisons_ask_yes_or_no_and_the_answer_follows_the_figures():
    went = {
        "net income": "up",
        "purchases of property, plant and equipment": "down",  # (1,577) after (1,373)
        "other — net": "up",  # 9 after (6)
    }
    answers = set()
    for seed in range(12):
        for q in filings(statement_chunks(), n=100, seed=seed, yes_no_share=1.0):
            (label,) = [label for label in went if label in q.question.lower()]
            asks_up = any(w in q.question for w in ("increase", "grown", "higher"))
            assert q.answer == ("Yes" if asks_up == (went[label] == "up") else "No"), q.question
            assert "Acme" in q.question and "2017" in q.question and "2018" in q.question
            assert q.meta["source"] == "offline-comparison"
            answers.add(q.answer)
            if label == "net income":
                assert q.meta["reads"] == ["$4,869 million", "$5,363 million"]
    assert answers == {"Yes", "No"}  # the shape, not the data, decides which is asked


def test_offline_question_kinds_follow_the_share_asked_for():
    rows = "\n".join(f"Line item number {w} {i} {i + 2}" for i, w in enumerate("abcdefghijklmnop"))
    pool = chunk_sections("ACME_2019_10K", [Section(f"(Millions) 2019 2018\n{rows}", 3)], "Acme")
    assert not any(q.answer in ("Yes", "No") for q in filings(pool, n=100))
    mixed = filings(pool, n=100, yes_no_share=0.5)
    assert 3 <= sum(q.answer in ("Yes", "No") for q in mixed) <= 13


def test_offline_comparisons_answer_yes_in_the_share_asked_for():
    rows = "\n".join(f"Line item number {w} {i} {i + 2}" for i, w in enumerate("abcdefghijklmnop"))
    pool = chunk_sections("ACME_2019_10K", [Section(f"(Millions) 2019 2018\n{rows}", 3)], "Acme")

    def answers(**share) -> list[str]:
        return [
            q.answer
            for seed in range(4)
            for q in filings(pool, n=100, seed=seed, yes_no_share=1.0, **share)
        ]

    assert set(answers(yes_share=1.0)) == {"Yes"} and set(answers(yes_share=0.0)) == {"No"}
    even, mostly_yes = answers(), answers(yes_share=0.8)
    assert 0.3 <= even.count("Yes") / len(even) <= 0.7
    assert mostly_yes.count("Yes") / len(mostly_yes) >= 0.65
    # Only which answer is asked for moves: the rows asked about stay the seed's.
    assert len(mostly_yes) == len(even)


def test_a_bracketed_dollar_figure_is_negative():
    text = "Acme Corp\n(Millions) 2023 2022\nIncrease (decrease) in cash $(952) $(2,420)\n"
    pool = chunk_sections("ACME_2023_10K", [Section(text, page=1)], entity="Acme")
    assert ("Increase (decrease) in cash", "2023", "-$952 million") in table_facts(pool[0])


def test_cause_questions_ask_what_drove_a_change_and_answer_with_the_filing_s_reason():
    pool = chunk_sections("AMEX_2022_10K", [Section(MD_AND_A, page=40)], entity="Amex")
    questions = {q.answer: q for q in cause_questions(pool, n=10)}
    # The measure and its reason as the filing writes them; "It" and page debris are no
    # measure a question can name; a reason ends where the filing offsets it.
    assert set(questions) == {
        "Business investments to drive growth momentum",
        "Higher average loan balances and interest rates",
    }
    marketing = questions["Business investments to drive growth momentum"]
    assert "marketing expense" in marketing.question and "Amex" in marketing.question
    assert "2022" in marketing.question and marketing.question.endswith("?")
    assert marketing.golden_chunk_ids == ["AMEX_2022_10K:p40:c0"]
    assert marketing.meta["source"] == "offline-cause"
    shapes = {q.question.split("Amex")[0] for s in range(8) for q in cause_questions(pool, 10, s)}
    assert len(shapes) >= 2, shapes  # not one template


def test_a_question_asks_a_cause_when_it_asks_what_drove_or_why_something_changed():
    assert asks_cause("What drove gross margin change as of FY2022 for American Express?")
    assert asks_cause("As of FY2023Q1, why did Pepsico raise full year guidance?")
    # "Explain why" in a question's instructions does not make it one.
    assert not asks_cause(
        "Does AMEX have an improving operating margin? If not, state that and explain why."
    )


def test_offline_questions_mix_in_causes_in_the_share_asked_for():
    rows = "\n".join(f"Line item number {w} {i} {i + 2}" for i, w in enumerate("abcdefghijklmnop"))
    tables = chunk_sections("AMEX_2022_10K", [Section(f"(Millions) 2022 2021\n{rows}", 3)], "Amex")
    prose = chunk_sections("AMEX_2022_10K", [Section(MD_AND_A, page=40)], entity="Amex")
    pool = [*tables, *prose]
    assert not any(q.meta["source"] == "offline-cause" for q in filings(pool, n=10))
    mixed = filings(pool, n=10, cause_share=0.2)
    assert sum(q.meta["source"] == "offline-cause" for q in mixed) == 2
    assert len(mixed) == 10


def test_the_filings_kinds_come_first_and_the_generic_kinds_fill_what_they_leave():
    tables = statement_chunks()  # three table rows
    pool = [*tables, *manual()]
    mixed = filings(pool, n=6)
    sources = [q.meta["source"] for q in mixed]
    assert sources[:3] == ["offline-table"] * 3 and len(mixed) == 6
    assert [q.question for q in filings(tables, n=100)] == [
        q.question for q in synthesized_questions("filings", tables, 100, kinds=FILINGS_KINDS)
    ]
    generic = synthesized_questions("", pool, 6)
    assert generic and all(q.meta["source"] != "offline-table" for q in generic)
