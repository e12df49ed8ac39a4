"""The scripted teacher that writes the cold start's trajectories, its search drills on made-up
names and the synthetic curriculum, on the toy corpus (tests/helpers/toy.py)."""

import dataclasses
import re

from engine.agent.hf_engine import HFRolloutEngine
from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question
from engine.packs.filings.names import reading_statement_names
from engine.search.index import SearchIndex
from engine.training.cold_start import synthetic_curriculum
from engine.training.teacher import (
    ScriptedTeacher,
    answer_readable,
    forced_trajectory,
    name_sections,
    scope_drills,
    search_segment,
    section_phrases,
    teacher_trajectories,
)
from tests.helpers.toy import FACTS, LIMITS, chunks, config, questions, tiny_model, tiny_tokenizer


def test_the_scripted_teacher_searches_the_entitys_documents_with_the_question_then_answers():
    index = SearchIndex.build(chunks())
    teacher = ScriptedTeacher(index, results_per_search=1)
    segments = teacher.segments(questions()[0])

    # No heading search: the toy's words are all too rare to be telling. The scoped question
    # is written as its scope alone: the engine searches the question there (protocol 6).
    assert segments == ["<search>[acme]</search>", "<answer>seven</answer>"]
    # With the filings pack's scope years, the year it asks about too (no document name has
    # it; the tool then searches the entity's documents).
    filings = ScriptedTeacher(index, results_per_search=1, scope_years=True)
    assert filings.segments(questions()[0])[0] == "<search>[acme 2021]</search>"


def test_a_teacher_quoting_rows_answers_a_synthesized_lookup_with_its_row_and_figure():
    index = SearchIndex.build(chunks())
    lookup = dataclasses.replace(questions()[0], meta={"quoted": "Revenue seven"})
    customers = questions()[1]

    quoting = ScriptedTeacher(index, results_per_search=1, quoted_answers=True)

    assert quoting.segments(lookup)[-1] == "<answer>Revenue seven</answer>"
    assert quoting.segments(customers)[-1] == "<answer>nine</answer>"  # the truth: no row
    assert ScriptedTeacher(index, results_per_search=1).segments(lookup)[-1] == (
        "<answer>seven</answer>"
    )


def test_the_scope_the_teacher_writes_alone_searches_the_question_within_it():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(index, results_per_search=1)
    question = questions()[0]

    trajectory = forced_trajectory(engine, question.question, teacher.segments(question))

    (search,) = trajectory.searches
    assert search.query == f"[acme] {question.question}"  # recorded as run
    assert set(search.chunk_ids) & set(question.golden_chunk_ids)
    assert trajectory.answer == "seven"


def test_the_teacher_names_the_entity_as_the_question_does():
    teacher = ScriptedTeacher(SearchIndex.build(chunks()))
    question = Question(
        id="q",
        question="Assume you are an analyst. What is JPM's net revenue in 2021? Round it.",
        answer="1",
        entity="JPMorgan",
        evidence=[],
    )
    assert teacher.entity_mention(question) == "JPM"
    assert teacher.entity_mention(Question("c", "Is Coca Cola big?", "yes", "Coca-Cola", [])) == (
        "Coca Cola"
    )


def test_the_teacher_scopes_to_the_documents_of_the_entity_and_year_the_question_names():
    filings = [
        Chunk(f"{doc}:1", doc, 1, entity, "revenue was 7 .")
        for doc, entity in (
            ("JPMORGAN_2021Q1_10Q", "JPMorgan"),
            ("JPMORGAN_2022Q2_10Q", "JPMorgan"),
        )
    ]
    teacher = ScriptedTeacher(SearchIndex.build(filings), scope_years=True)

    def scope(text):
        return teacher.scope(Question("q", text, "7", "JPMorgan", []))

    generic = dataclasses.replace(teacher, scope_years=False)
    assert generic.scope(Question("q", "What was JPM's revenue in 2021?", "7", "JPMorgan", [])) == (
        "[JPM] "
    )  # no year convention without the filings pack

    assert scope("What was JPM's revenue in 2021 Q1?") == "[JPM 2021] "
    # A filing reports its year beside earlier ones: the latest year named is the one to read.
    assert scope("How did JPM's revenue change between 2021 Q1 and 2022 Q2?") == "[JPM 2022] "
    assert scope("What is JPM's 2022 revenue growth over 2021?") == "[JPM 2022] "
    # No 2019 filing: the tool falls back to JPMorgan's filings, so the habit stays one.
    assert scope("What was JPM's revenue in 2019?") == "[JPM 2019] "
    assert teacher.scope(Question("q", "What was Globex's revenue?", "7", "Globex", [])) == ""


def test_scope_drills_copy_made_up_names_and_years_into_the_scope_and_stop_there():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(index, scope_years=True)
    taught = frozenset(q.id for q in questions())  # so only made-up names are drilled
    drills = scope_drills(engine, teacher, questions(), per_question=3, seed=1, taught=taught)

    assert len(drills) == 3 * len(questions())
    for drill in drills:
        question = drill.question
        assert question.startswith("what was ") and question.endswith(" ?")
        name, year = re.fullmatch(r"what was (.+) \w+ in (\d{4}) \?", question).groups()
        assert name not in FACTS  # made up
        assert drill.text == f"<search>[{name} {year}]</search>"
        # Only the segment is a target, and nothing follows it: no results, no answer.
        prompt = len(engine.prompt_ids(question))
        assert drill.loss_mask[:prompt] == [0] * prompt
        assert all(drill.loss_mask[prompt:]) and len(drill.token_ids) > prompt
    assert len({d.question for d in drills}) == len(drills)
    # A question without a whole teacher trajectory is drilled on its real scoped search.
    real = scope_drills(engine, teacher, questions(), per_question=0)
    assert [d.text for d in real] == [
        f"<search>[{q.entity} {FACTS[q.entity][0]}]</search>" for q in questions()
    ]


def test_on_the_default_path_a_made_up_name_is_copied_into_the_second_search():
    # The default path's first search is the bare question: a drill scoping it would teach
    # a habit the teacher does not have. The name goes where the teacher's scope goes.
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(
        index, scoped_first_search=False, refine_always=True, refine_terms=False
    )
    taught = frozenset(q.id for q in questions())  # so only made-up names are drilled
    drills = scope_drills(engine, teacher, questions(), per_question=2, seed=1, taught=taught)

    assert len(drills) == 2 * len(questions())
    for drill in drills:
        name = re.fullmatch(r"what was (.+) \w+ in \d{4} \?", drill.question).group(1)
        assert name not in FACTS  # made up
        (first,) = drill.searches  # the second is written, never run
        assert first.query == drill.question  # the bare question, its results shown
        assert drill.text.startswith("<search>[]</search>")
        # The question again within the made-up name, written as the scope alone; nothing after.
        assert re.search(rf"</results>\s*<search>\[{name}\]</search>$", drill.text)
    # Without a second search there is nothing named to copy: no drill.
    bare = dataclasses.replace(teacher, refine_search=False)
    assert scope_drills(engine, bare, questions(), per_question=2, seed=1, taught=taught) == []


def test_a_question_naming_no_entity_is_drilled_on_its_own_unscoped_search_with_no_copies():
    # Drilled on scoped questions alone, a student scoped those naming no entity to a word.
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(index)
    unnamed = Question("u", "what was the revenue in 2019 ?", "seven", "acme", ["acme-1"])
    assert teacher.scope(unnamed) == ""

    drills = scope_drills(engine, teacher, [unnamed], per_question=3, seed=1)

    assert [d.text for d in drills] == ["<search>what was the revenue in 2019 ?</search>"]


def test_scope_drills_scope_to_the_latest_made_up_year_the_question_names():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(index, scope_years=True)
    question = Question(
        "q2", "what was acme revenue change from 2019 to 2021 ?", "seven", "acme", []
    )
    drills = scope_drills(
        engine, teacher, [question], per_question=8, seed=5, taught=frozenset({"q2"})
    )

    assert len(drills) == 8
    for drill in drills:
        years = re.findall(r"\d{4}", drill.question)
        assert len(years) == 2 and years != ["2019", "2021"]  # both swapped
        assert drill.text.endswith(f" {max(years)}]</search>")


def test_half_the_made_up_names_begin_as_a_training_company_does_and_name_no_document():
    # The student wrote "[Pfizer]" for PepsiCo: the first letters of a name must not decide it.
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(index, scope_years=True)
    taught = frozenset(q.id for q in questions())
    drills = scope_drills(engine, teacher, questions(), per_question=20, seed=3, taught=taught)

    names = [re.fullmatch(r"<search>\[(.+) \d{4}\]</search>", d.text).group(1) for d in drills]
    near = [n for n in names if any(n[:2] == entity[:2] for entity in FACTS)]
    assert 0.3 * len(names) < len(near) < 0.8 * len(names)
    assert not any(index.documents_named(name) for name in names)
    assert not set(names) & set(FACTS)


def statement_pages(income: str = "net sales 70") -> list[Chunk]:
    """Three companies' filings, a page per statement, each opening with its name."""
    return [
        Chunk(f"{co}-{kind}", f"{co}-10k", page, co, f"{co} {kind} statement . {body}")
        for co in ("acme", "globex", "initech")
        for page, (kind, body) in enumerate(
            [
                ("cash flows", "purchases of equipment 40"),
                ("balance sheet", "total assets 90"),
                ("income", income),
                ("equity", "retained earnings 20"),
                ("leases", "right of use 10"),
            ]
        )
    ]


def statement_teacher(index: SearchIndex, **options) -> ScriptedTeacher:
    """A teacher for `statement_pages`: one result per search, every word learnable, and a
    page kind a word every company's headings hold ("statement" opens all 15 pages, too
    many; "acme" one company's), here on at most half the pages."""
    return ScriptedTeacher(
        index, results_per_search=1, min_df=1, max_df_share=1.0, kind_page_share=0.5, **options
    )


def test_when_the_question_misses_the_teacher_searches_within_the_evidences_kind_of_page():
    index = SearchIndex.build(statement_pages())
    question = Question(
        id="q",
        question="what was the capital expenditure of acme ?",
        answer="40",
        entity="acme",
        evidence=[Evidence("purchases of equipment 40")],
        golden_chunk_ids=["acme-cash flows"],
    )
    teacher = statement_teacher(index, refine_search=False)
    queries = teacher.queries(question)

    # Nothing of the question is in the evidence but the entity, which finds the wrong page;
    # the key terms within the pages headed by the evidence's kind find the right one,
    # though none of their words is on it.
    assert queries[0] == f"[acme] {question.question}"
    assert index.search(queries[0], k=1)[0].chunk_id != "acme-cash flows"
    assert queries[1] == "[acme | cash] what capital expenditure"
    assert index.search(queries[1], k=1)[0].chunk_id == "acme-cash flows"
    # The same kind of page for a company the teacher never taught.
    assert index.search("[initech | cash] capital expenditure", k=1)[0].chunk_id == (
        "initech-cash flows"
    )
    # Without that search, a question whose own search misses has no trajectory.
    without = statement_teacher(index, heading_search=False, refine_search=False)
    assert without.queries(question) is None


def test_the_section_words_are_the_questions_own_phrase_word_for_word():
    index = SearchIndex.build(statement_pages())
    teacher = statement_teacher(index, section_search=True)

    def words(text: str, golden: str) -> list[str]:
        return teacher.section_words(Question("q", text, "40", "acme", [], [golden]))

    # As the question writes it, short words inside kept, the one a golden page is on.
    assert words("acme capex, from the statement of cash flows.", "acme-cash flows") == [
        "statement",
        "of",
        "cash",
        "flows",
    ]
    both = "what was the capex? use the balance sheet and the cash flows statement."
    assert words(both, "acme-balance sheet") == ["balance", "sheet"]
    assert words(both, "acme-cash flows") == ["cash", "flows", "statement"]
    # Punctuation ends a phrase; words the heading holds but no kind of page among them
    # ("statement" alone), names and figures are no phrase.
    assert words("the cash flows: statement", "acme-cash flows") == ["cash", "flows"]
    assert words("per the statement of acme", "acme-cash flows") == []
    # The phrase searches the page for a company the teacher never taught.
    unseen = ask_within("initech", "statement of cash flows", "initech-cash flows")
    query = teacher.section_query(unseen)
    assert query.startswith("[initech | statement of cash flows] ")
    assert index.search(query, k=1)[0].chunk_id == "initech-cash flows"


def test_a_statement_its_heading_names_otherwise_is_searched_by_the_questions_name():
    # Searched as the filings pack's agent searches: a statement under its other names too.
    index = reading_statement_names(SearchIndex.build(statement_pages()))
    teacher = statement_teacher(index, section_search=True, statement_names=True)

    # "acme income statement . …" heads the income page: the question's "P&L statement" is
    # copied, and the search tool reads it as the income statement's other names.
    question = ask_within("acme", "P&L statement", "acme-income")
    assert dataclasses.replace(teacher, statement_names=False).section(question) == ([], set())
    assert teacher.section(question) == (["p&l", "statement"], {"incom", "statement"})
    query = teacher.section_query(question)
    assert query.startswith("[acme | p&l statement] ")
    kept = {hit.chunk_id for hit in index.search(query, k=5)}  # (and "retained earnings")
    assert "acme-income" in kept and not kept & {"acme-cash flows", "acme-balance sheet"}
    sheet = ask_within("initech", "statement of financial position", "initech-balance sheet")
    assert teacher.section_words(sheet) == ["statement", "of", "financial", "position"]
    assert index.search(teacher.section_query(sheet), k=1)[0].chunk_id == "initech-balance sheet"
    # Where the question also writes the heading's own words, those come first.
    both = ask_within("acme", "income statement, the P&L statement", "acme-income")
    assert teacher.section_words(both) == ["income", "statement"]
    # A statement name that is not the evidence's page is no phrase.
    assert teacher.section_words(ask_within("acme", "P&L statement", "acme-cash flows")) == []


def ask_within(entity: str, where: str, golden: str) -> Question:
    text = f"what was the capital expenditure of {entity} in its {where} ?"
    return Question(f"{entity} {where}", text, "40", entity, [Evidence("40")], [golden])


def test_the_teacher_searches_again_within_the_part_of_the_document_the_question_names():
    # The question's own words rank the income page first: it talks of capital expenditure.
    capex_talk = "net sales 70 ; capital expenditure plans , capital expenditure guidance"
    index = SearchIndex.build(statement_pages(income=capex_talk))
    teacher = statement_teacher(
        index, heading_search=False, refine_search=False, section_search=True
    )
    question = ask_within("acme", "cash flows statement", "acme-cash flows")

    # The phrase of the question that the evidence's page heading holds, word for word, one
    # of its words naming a kind of page ("statement" is every page's: not one alone).
    assert teacher.section_words(question) == ["cash", "flows", "statement"]
    first, second = teacher.queries(question)
    assert index.search(first, k=1)[0].chunk_id == "acme-income"  # the words' own page
    assert second.startswith("[acme | cash flows statement] ")
    assert index.search(second, k=1)[0].chunk_id == "acme-cash flows"
    # Copied from the question, the words carry to a company the teacher never taught.
    unseen = ask_within("initech", "cash flows statement", "initech-cash flows")
    assert index.search(teacher.section_query(unseen), k=1)[0].chunk_id == "initech-cash flows"
    # Where the first search already finds the evidence, the second comes all the same: the
    # habit is to look where the question says, which the student cannot know it found.
    found = ask_within("acme", "income statement", "acme-income")
    assert index.search(teacher.scope(found) + found.question, k=1)[0].chunk_id == "acme-income"
    again = teacher.queries(found)[1]
    assert again.startswith("[acme | ") and " ".join(teacher.section_words(found)) in found.question
    assert index.search(again, k=1)[0].chunk_id == "acme-income"
    # A question naming no part of the document gets no such search, and without the
    # option none does.
    assert teacher.section_words(ask_within("acme", "filing", "acme-cash flows")) == []
    plain = dataclasses.replace(teacher, section_search=False)
    assert plain.section_query(question) is None
    assert plain.queries(question) is None  # its one search misses


def test_drills_on_made_up_names_copy_the_part_of_the_document_the_question_names():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(statement_pages())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    teacher = ScriptedTeacher(
        index, min_df=1, max_df_share=1.0, section_search=True, kind_page_share=0.5
    )
    question = ask_within("acme", "cash flows statement", "acme-cash flows")

    (drill,) = scope_drills(engine, teacher, [question], per_question=1, taught={question.id})

    name = re.fullmatch(r"what was the capital expenditure of (.+) in its .*", drill.question)[1]
    assert name != "acme"
    assert drill.text.startswith(f"<search>[{name}]</search>")
    assert drill.text.endswith(
        f"<search>[{name} | cash flows statement] {teacher.key_terms(question)}</search>"
    )


def customer_question(entity: str, text: str, golden: str) -> Question:
    return Question(f"{entity} {text}", text, "40", entity, [Evidence("40")], [golden])


def test_the_customers_sentences_naming_a_part_of_the_document_become_phrases_for_any_question():
    teacher = statement_teacher(SearchIndex.build(statement_pages()), section_search=True)
    asked = [
        customer_question(
            "acme",
            "What was the capital expenditure of acme in 2021? Answer in millions. "
            "Base your answer on the cash flows statement.",
            "acme-cash flows",
        ),
        customer_question(
            "globex",
            "Using only the balance sheet: what were total assets of globex in 2020?",
            "globex-balance sheet",
        ),
        customer_question(  # names its company or year, or defines: about itself only
            "initech",
            "What was the capex of initech? Look in the cash flows statement of initech. "
            "Use the cash flows statement for 2020. Capex is defined from the cash flows.",
            "initech-cash flows",
        ),
    ]

    phrases = section_phrases(teacher, asked)

    assert {(p.text, p.stems, p.before) for p in phrases} == {
        ("Base your answer on the cash flows statement.", frozenset({"cash", "flow"}), False),
        ("Using only the balance sheet:", frozenset({"balanc", "sheet"}), True),
    }


def test_synthetic_questions_on_a_kind_of_page_the_customer_names_carry_the_customers_phrase():
    index = SearchIndex.build(statement_pages())
    teacher = statement_teacher(index, refine_search=False, section_search=True)
    phrases = section_phrases(
        teacher,
        [
            customer_question(
                "acme",
                "What was acme's capex in 2021? Base your answer on the cash flows statement.",
                "acme-cash flows",
            ),
            customer_question(
                "acme",
                "Using only the balance sheet: what were acme's assets in 2021?",
                "acme-balance sheet",
            ),
        ],
    )
    synthetic = [
        customer_question("globex", "What was globex's capital expenditure in 2022?", golden)
        for golden in ("globex-cash flows", "globex-balance sheet", "globex-leases")
    ]

    cash, balance, leases = name_sections(teacher, synthetic, phrases)

    assert cash.question == (
        "What was globex's capital expenditure in 2022? "
        "Base your answer on the cash flows statement."
    )
    assert balance.question == (
        "Using only the balance sheet: what was globex's capital expenditure in 2022?"
    )
    assert leases == synthetic[2]  # a kind of page no customer question names
    # The teacher then searches where the phrase says, with what the question asks.
    section = teacher.drilled_searches(cash)[-1]
    assert section == "[globex | cash flows statement] what capital expenditure"
    assert index.search(section, k=1)[0].chunk_id == "globex-cash flows"


def test_key_terms_leave_out_the_questions_instructions():
    teacher = statement_teacher(SearchIndex.build(statement_pages()))
    question = customer_question(
        "acme",
        "Assume you are an analyst. What was the backlog of acme in 2021? "
        "Answer in USD millions. Round to two decimal places.",
        "acme-income",
    )

    assert teacher.key_terms(question) == "what backlog"
    # A question that is all instructions keeps its words.
    bare = customer_question("acme", "Describe the backlog.", "acme-income")
    assert teacher.key_terms(bare) == "describe backlog"


def test_page_kinds_are_heading_words_most_entities_share_not_a_companys_name():
    # Every page of acme's filing opens with its full name; two of them then with a
    # statement's heading, as other companies' do. Only the heading can carry to a new one.
    names = {"acme": "acme rocket works", "globex": "", "initech": "", "hooli": "", "soylent": ""}
    pages = []
    for entity, name in names.items():
        openings = [
            "consolidated balance sheets assets liabilities",
            "consolidated statements cash flows capex",
            *(f"risk factor {n} competition weather" for n in range(8)),
        ]
        for n, opening in enumerate(openings):
            text = f"{name} {opening} {entity} notes"
            pages.append(Chunk(f"{entity}-{n}", f"{entity}-10k", n, entity, text))
    index = SearchIndex.build(pages)
    teacher = ScriptedTeacher(index, min_df=1, max_df_share=1.0, kind_page_share=0.1)

    words = teacher.page_kind("acme-0")

    assert {"balance", "sheets"} <= set(words)
    # Not the company's name, not what opens every other page too ("risk", "notes").
    assert not {"acme", "rocket", "works", "risk", "notes"} & set(words)


BOILER = "report amount fiscal"


def boilerplate_pages(*more: Chunk) -> list[Chunk]:
    """acme's page of boilerplate, which a question's own words rank first, and its backlog
    page, which only the question's key terms find; then `more`."""
    return [
        Chunk("acme-1", "acme-10k", 1, "acme", f"acme {BOILER} {BOILER} overview"),
        Chunk("acme-2", "acme-10k", 2, "acme", "acme backlog was three at year end"),
        *more,
    ]


def ask_amount(entity: str, what: str, answer: str, golden: str) -> Question:
    text = f"what amount did {entity} report as {what} for fiscal 2021 ?"
    return Question(f"{entity} {what}", text, answer, entity, [Evidence(answer)], [golden])


def test_when_the_question_misses_the_teacher_searches_again_with_its_key_terms():
    globex = Chunk("globex-1", "globex-10k", 1, "globex", f"globex {BOILER} backlog nine")
    index = SearchIndex.build(boilerplate_pages(globex))
    question = ask_amount("acme", "backlog", "three", "acme-2")
    pool = [
        question,
        ask_amount("globex", "sales", "nine", "globex-1"),
        ask_amount("acme", "dividends", "1", ""),
    ]
    teacher = ScriptedTeacher(index, results_per_search=1, heading_search=False)
    teacher.learn_boilerplate(pool, share=0.6)  # words of all three questions

    first, second = teacher.queries(question)
    # The question's own words rank the boilerplate page first; its key terms do not.
    assert index.search(first, k=1)[0].chunk_id == "acme-1"
    assert second == "[acme] backlog"
    assert index.search(second, k=1)[0].chunk_id == "acme-2"


def missed_and_found():
    """A teacher and engine over acme's pages, a question its first search misses (backlog)
    and one it finds (dividends)."""
    dividends = Chunk("acme-3", "acme-10k", 3, "acme", f"acme {BOILER} dividends one")
    index = SearchIndex.build(boilerplate_pages(dividends))
    tokenizer = tiny_tokenizer()
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    missed = ask_amount("acme", "backlog", "three", "acme-2")
    found = ask_amount("acme", "dividends", "one", "acme-3")
    teacher = ScriptedTeacher(index, results_per_search=1, heading_search=False)
    teacher.learn_boilerplate([missed, found], share=0.6)
    return engine, teacher, missed, found


def test_a_drill_whose_first_search_misses_goes_on_to_the_key_terms_and_stops_there():
    engine, teacher, missed, found = missed_and_found()

    drills = scope_drills(engine, teacher, [missed, found], per_question=0)

    assert [d.text.count("<search>") for d in drills] == [2, 1]
    second = drills[0]
    assert second.text.endswith("<search>[acme] backlog</search>")  # after a miss
    assert second.searches[0].chunk_ids == ["acme-1"]  # the real results in between
    assert len(second.searches) == 1  # nothing follows the last search: no results, no answer
    trained = [t for t, m in zip(second.token_ids, second.loss_mask, strict=True) if m]
    assert "<results>" not in engine.tokenizer.decode(trained)


def test_a_teacher_that_refines_always_searches_the_key_terms_after_a_hit_too():
    engine, on_miss, missed, found = missed_and_found()
    always = dataclasses.replace(on_miss, refine_always=True)

    assert on_miss.queries(found) == [f"[acme] {found.question}"]
    assert always.queries(found) == [*on_miss.queries(found), "[acme] dividends"]
    assert always.queries(missed) == on_miss.queries(missed)  # a miss: the same either way
    # The made-up copies search again too, the key terms under the made-up scope.
    drills = scope_drills(engine, always, [found], per_question=1, taught=frozenset({found.id}))
    assert len(drills) == 1 and drills[0].text.count("<search>") == 2
    assert drills[0].text.endswith("] dividends</search>")
    assert "acme" not in drills[0].text.split("<search>")[-1]


def test_the_synthetic_curriculum_reads_only_the_training_entities_documents():
    table = "(Millions) 2021 2020\nBacklog of orders {a} {b}\nResearch spending {b} {a}\n"
    pages = [
        Chunk(f"{co}-1", f"{co}-10k", 1, co, table.format(a=a, b=b))
        for co, a, b in (("acme", 7, 8), ("globex", 5, 6))
    ]
    train_questions = [q for q in questions() if q.entity == "acme"]
    cfg = config(synthetic_questions=50, pack="filings")  # tables are the filings pack's kind

    synthetic = synthetic_curriculum(SearchIndex.build(pages), train_questions, cfg)

    assert len(synthetic) == 2  # one question per row, acme only
    assert {q.entity for q in synthetic} == {"acme"}
    assert all(q.golden_chunk_ids == ["acme-1"] for q in synthetic)
    assert synthetic_curriculum(SearchIndex.build(pages), train_questions, config()) == []
    assert not any(q.answer in ("Yes", "No") for q in synthetic)  # none asked yes or no


def test_without_the_filings_pack_the_curriculum_asks_nothing_of_year_column_tables():
    table = "(Millions) 2021 2020\nBacklog of orders 7 8\nResearch spending 8 7\n"
    index = SearchIndex.build([Chunk("acme-1", "acme-10k", 1, "acme", table)])
    train_questions = [q for q in questions() if q.entity == "acme"]

    synthetic = synthetic_curriculum(index, train_questions, config(synthetic_questions=50))

    assert not [q for q in synthetic if q.meta["source"] in ("offline-table", "offline-comparison")]


def test_the_synthetic_curriculum_asks_yes_or_no_as_often_as_the_customer_does():
    rows = "\n".join(f"Line item {w} {i} {i + 3}" for i, w in enumerate("abcdefghijklmnopqrst"))
    pages = [Chunk("acme-1", "acme-10k", 1, "acme", f"(Millions) 2021 2020\n{rows}\n")]
    asked = [q for q in questions() if q.entity == "acme"] * 2
    asked[0] = Question("yn", "Did acme grow in 2021?", "Yes, by a third.", "acme", [])

    synthetic = synthetic_curriculum(
        SearchIndex.build(pages), asked, config(synthetic_questions=20, pack="filings")
    )

    yes_no = [q for q in synthetic if q.answer in ("Yes", "No")]
    assert 4 <= len(yes_no) <= 16, len(yes_no)  # about half, as in the customer's two


def test_the_synthetic_curriculum_answers_yes_as_often_as_the_customer_does():
    """A student that cannot yet read a yes or no from the figures answers it by the
    answers it was taught: they are to be the customer's, not a coin's."""
    rows = "\n".join(f"Line item {w} {i} {i + 3}" for i, w in enumerate("abcdefghijklmnopqrst"))
    pages = [Chunk("acme-1", "acme-10k", 1, "acme", f"(Millions) 2021 2020\n{rows}\n")]
    index = SearchIndex.build(pages)

    def synthetic_answers(*truths: str) -> list[str]:
        asked = [
            Question(f"yn{i}", f"Did acme grow in 2021 ({i})?", truth, "acme", [])
            for i, truth in enumerate(truths)
        ]
        cfg = config(synthetic_questions=20, pack="filings")
        return [
            q.answer
            for seed in range(5)
            for q in synthetic_curriculum(index, asked, dataclasses.replace(cfg, seed=seed))
        ]

    assert set(synthetic_answers("Yes.", "Yes, by a third.", "Yes")) == {"Yes"}
    assert set(synthetic_answers("No.", "No, it shrank.")) == {"No"}
    mostly_yes = synthetic_answers("Yes.", "Yes", "Yes", "No")
    assert 0.6 <= mostly_yes.count("Yes") / len(mostly_yes) <= 0.9, mostly_yes


def test_teacher_trajectories_train_only_on_the_teachers_own_tokens():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    q = questions()[0]
    trajectory = forced_trajectory(engine, q.question, ScriptedTeacher(index).segments(q))

    trained = tokenizer.decode(
        [t for t, m in zip(trajectory.token_ids, trajectory.loss_mask, strict=True) if m]
    )
    assert "acme-1" in trajectory.retrieved_chunk_ids
    assert "<search>" in trained and "<answer>" in trained
    assert "<results>" not in trained and "filing" not in trained  # tool output is context only


def test_the_synthetic_curriculum_asks_what_drove_a_change_as_often_as_the_customer_does():
    rows = "\n".join(f"Line item {w} {i} {i + 3}" for i, w in enumerate("abcdefghijklmnopqrst"))
    reasons = "\n".join(
        f"Line item {w} increased, primarily due to higher {w} volumes in the year."
        for w in "abcdefghij"
    )
    pages = [
        Chunk("acme-1", "acme-2021-10k", 1, "acme", f"(Millions) 2021 2020\n{rows}\n"),
        Chunk("acme-2", "acme-2021-10k", 2, "acme", reasons),
    ]
    asked = [q for q in questions() if q.entity == "acme"] * 4
    index = SearchIndex.build(pages)

    assert not any(
        q.meta["source"] == "offline-cause"
        for q in synthetic_curriculum(index, asked, config(synthetic_questions=20, pack="filings"))
    )
    asked[0] = Question("why", "What drove acme's backlog up in 2021?", "Orders.", "acme", [])
    synthetic = synthetic_curriculum(index, asked, config(synthetic_questions=20, pack="filings"))

    causes = [q for q in synthetic if q.meta["source"] == "offline-cause"]
    assert len(causes) == 5, len(causes)  # a quarter, as in the customer's four
    assert all(q.answer.startswith("Higher ") and "2021" in q.question for q in causes)


def test_the_teacher_keeps_no_trajectory_whose_answer_states_a_figure_its_results_hide():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    read, unread = questions()[:2]
    unread.answer = "$9 million"  # globex's page says "nine" in words: no figure to copy

    teacher = ScriptedTeacher(index)

    assert list(teacher_trajectories(engine, teacher, [read, unread], True)) == [read.id]
    # A customer's own question may be worked out from what was read: it is kept.
    assert list(teacher_trajectories(engine, teacher, [read, unread])) == [read.id, unread.id]


def test_an_answer_is_readable_when_the_results_show_each_of_its_figures():
    question = Question("q", "What was capex in USD millions?", "$1,577.00", None, [])
    statement = "In millions 2018 2017\nPurchases of PP&E (1,577) (1,373)"
    assert answer_readable(question, statement)  # the sign and the scale word may differ
    assert not answer_readable(question, "Purchases of PP&E (1,373)")
    both = Question("r", "How did it change?", "From 24.6% to 20.2%", None, [])
    assert not answer_readable(both, "The rate was 24.6% in 2021.")  # every figure, not one
    yes = Question("y", "Did it retain card members?", "Yes", None, [])
    assert answer_readable(yes, "")  # no figure to check
    compared = Question("c", "Did capex fall?", "No", None, [])
    compared.meta["reads"] = ["-1,373 million", "-1,577 million"]
    assert answer_readable(compared, statement)  # both figures it is worked out from
    assert not answer_readable(compared, "Purchases of PP&E (1,577)")
    why = Question("w", "What drove marketing up?", "Business investments in growth", None, [])
    why.meta["source"] = "offline-cause"  # a reason read off the filing: its words are shown
    assert answer_readable(why, "Marketing expense increased due to business investments in growth")
    assert not answer_readable(why, "Marketing expense increased 8 percent, primarily due")


def test_the_teacher_answers_a_yes_or_no_question_with_its_yes_or_no_alone():
    index = SearchIndex.build(chunks())
    question = questions()[0]
    question.answer = "No, revenue fell by a fifth, to seven in 2021 from nine."
    teacher = ScriptedTeacher(index, results_per_search=1)
    assert teacher.segments(question)[-1] == "<answer>No</answer>"


def test_a_teacher_without_a_scoped_first_search_writes_the_question_as_empty_brackets():
    index = SearchIndex.build(chunks())
    scoped = ScriptedTeacher(index, heading_search=False, refine_always=True)
    bare = dataclasses.replace(scoped, scoped_first_search=False)
    question = questions()[0]

    first, second = bare.drilled_searches(question)
    assert first == question.question and second.startswith("[acme] ")
    assert scoped.drilled_searches(question)[0] == f"[acme] {question.question}"
    assert bare.segments(question)[0] == "<search>[]</search>"


def test_a_teacher_without_key_terms_searches_the_question_again_written_as_its_scope_alone():
    index = SearchIndex.build(chunks())
    terms = ScriptedTeacher(
        index, heading_search=False, refine_always=True, scoped_first_search=False
    )
    again = dataclasses.replace(terms, refine_terms=False)
    named = questions()[0]  # names acme
    unnamed = dataclasses.replace(named, question="What were the dividends?", entity="acme")

    assert again.drilled_searches(named) == [named.question, f"[acme] {named.question}"]
    assert again.segments(named)[:2] == ["<search>[]</search>", "<search>[acme]</search>"]
    assert terms.segments(named)[1] != "<search>[acme]</search>"  # the key terms written out
    # A question naming no documents searches itself again, everywhere: its next hits.
    assert again.drilled_searches(unnamed) == [unnamed.question] * 2
    assert search_segment(unnamed.question, unnamed.question, True) == "<search>[]</search>"


def test_a_second_search_of_the_question_shows_its_next_hits_not_the_first_ones_again():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    engine = HFRolloutEngine(tiny_model(tokenizer), tokenizer, index, limits=LIMITS)
    question = questions()[0].question

    twice = forced_trajectory(engine, question, ["<search>[]</search>", "<search>[]</search>"], k=1)

    first, second = (s.chunk_ids for s in twice.searches)
    assert first and second and not set(first) & set(second)
    assert [h.chunk_id for h in index.search(question, 2)] == [*first, *second]


def test_a_completion_is_readable_only_where_the_results_show_its_blanked_word():
    question = Question(
        "c1",
        'What word fills the blank in "The boiler ___ the water."?',
        "heats",
        None,
        [Evidence("The boiler heats the water.", doc="manual", page=1)],
        meta={"source": "offline-completion"},
    )

    assert answer_readable(question, "[manual:p1:c0] manual | page 1\nThe boiler heats the water.")
    assert not answer_readable(question, "[manual:p1:c0] manual | page 1\nThe boiler …")
    assert not answer_readable(question, "The boiler preheats the water.")  # a whole word only
