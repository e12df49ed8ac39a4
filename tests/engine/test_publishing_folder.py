"""A published folder: Hugging Face files, a model card, an agent bundle, one archive."""

import ast
import json
import subprocess
import sys
import tarfile

import pytest
from transformers import AutoModelForCausalLM

from engine.agent.protocol import closing_tag, searched_query
from engine.documents.chunking import Chunk
from engine.packs.filings.names import STATEMENT_NAMES, reading_statement_names
from engine.publishing import PublishInfo, make_archive, publish_folder
from engine.publishing.bundle import BUNDLED_MODULES
from engine.search.index import SearchHit, SearchIndex
from engine.training.config import TrainConfig
from tests.helpers.toy import chunks, questions, tiny_model, tiny_tokenizer

REPORT = {
    "policies": {
        "trained": {"answer_score": 0.5, "golden_recall": 0.75, "pass@k": 0.5, "n": 2},
        "base": {"answer_score": 0.0, "golden_recall": 0.25, "pass@k": 0.0, "n": 2},
        "echo": {"answer_score": 0.25, "golden_recall": 0.5, "pass@k": 0.25, "n": 2},
    }
}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    root = tmp_path_factory.mktemp("publish")
    tokenizer = tiny_tokenizer()
    tiny_model(tokenizer).save_pretrained(root / "model")
    tokenizer.save_pretrained(root / "model")
    SearchIndex.build(chunks()).save(root / "index")
    info = PublishInfo(
        name="acme-agent",
        base_model="tiny-llama",
        config=TrainConfig(steps=3).to_dict(),
        data_summary={"documents": 4, "training questions": 2, "validation questions": 2},
        eval_report=REPORT,
    )
    return publish_folder(root / "model", root / "index", info, root / "acme-agent")


def bundled_script(published):
    """The published folder's `agent/run_agent.py`, imported as a module."""
    sys.path.insert(0, str(published / "agent"))
    try:
        import run_agent
    finally:
        sys.path.pop(0)
    return run_agent


def test_the_folder_holds_hugging_face_files_that_load(published):
    for name in ("model.safetensors", "config.json", "generation_config.json"):
        assert (published / name).is_file()
    assert (published / "tokenizer.json").is_file()
    assert not list(published.rglob("trainer_state.pt"))
    model = AutoModelForCausalLM.from_pretrained(published)
    assert model.config.num_hidden_layers == 2


def test_the_model_card_names_the_base_data_baselines_protocol_and_a_snippet(published):
    card = (published / "README.md").read_text()
    assert "base_model: tiny-llama" in card
    assert "training questions: 2" in card
    assert "| trained | 0.500 | 0.750 |" in card
    assert "| echo | 0.250 |" in card
    assert "<search>query</search>" in card and "<answer>" in card
    assert "AutoModelForCausalLM.from_pretrained" in card
    assert "python agent/run_agent.py" in card


def test_the_bundled_index_finds_what_the_engine_finds(published):
    run_agent = bundled_script(published)
    bundled = run_agent.search_index.SearchIndex.load(published / "agent" / "index")
    engine = SearchIndex.load(published / "agent" / "index")
    queries = [q.question for q in questions()]
    scopes = [f"[{c.entity}] {q}" for c, q in zip(engine.chunks, queries, strict=False)]
    # A page filter after the bar ("[acme | revenue]": acme's pages headed "revenue"), one no
    # page passes, and figures, which the index does not hold as words.
    pages = [f"[{q.entity} | {q.question.split()[3]}] results" for q in questions()]
    others = ["[| dividend] period", "[acme | nothing] filing", "revenue 1,200.5 in 2021"]
    # Names read loosely (one typo) and periods written "FY2020", as the index reads them.
    loose = {  # query: the same without what it tests
        "[globx] annual filing": "annual filing",
        "[umbrela 2023] company reported": "company reported",
        "FY2020 annual filing": "annual filing",
    }
    others += list(loose)
    for query in [*queries, *scopes, *pages, *others, "[no such document] revenue"]:
        expected = [h.chunk_id for h in engine.search(query, k=3)]
        assert [h.chunk_id for h in bundled.search(query, k=3)] == expected
    assert any(
        [h.chunk_id for h in engine.search(s, k=3)] != [h.chunk_id for h in engine.search(q, k=3)]
        for s, q in zip(scopes, queries, strict=False)
    ), "no scope changed the results: the test would not see a bundle that ignores scopes"
    assert all(
        [h.chunk_id for h in engine.search(q, k=3)] != [h.chunk_id for h in engine.search(p, k=3)]
        for q, p in loose.items()
    ), "a loose name or an FY year that changed nothing would not test the bundle's reading"


def test_the_bundled_index_reads_a_scope_year_beside_the_querys_as_the_engine(published, tmp_path):
    docs = [
        Chunk(f"{doc}:p1:c0", doc, 1, "PepsiCo", "revolving credit agreement")
        for doc in ("PEPSICO_2021_10K", "PEPSICO_2022_10K", "PEPSICO_2023_8K")
    ]
    SearchIndex.build(docs).save(tmp_path / "index")
    engine = SearchIndex.load(tmp_path / "index")
    bundled = bundled_script(published).search_index.SearchIndex.load(tmp_path / "index")
    wrong_year = "[Pepsico 2022] As of May 26, 2023, the revolving credit agreement"
    earlier_year = "[Pepsico 2023] the revolving credit agreement, FY2021 - FY2023"
    queries = [wrong_year, earlier_year, "[Pepsico 2022] revolving credit agreement"]
    queries.append("[Pepsico] in 2023")
    for query in queries:
        expected = [h.chunk_id for h in engine.search(query, k=3)]
        assert [h.chunk_id for h in bundled.search(query, k=3)] == expected
    assert len(engine.search(wrong_year, k=3)) == 2  # the test sees a bundle reading one year
    assert len(engine.search(earlier_year, k=3)) == 1  # and one reading every year named


def test_the_bundled_index_puts_the_pages_a_heading_titles_first_as_the_engine(published, tmp_path):
    prose = "Contents\nOther cash flows from investing activities include capital expenditure"
    statement = "Contents\nConsolidated Statement of Cash Flows\nPurchases of property 1,577"
    docs = [
        Chunk("ACME_2018:p1:c0", "ACME_2018", 1, "Acme", prose),
        Chunk("ACME_2018:p2:c0", "ACME_2018", 2, "Acme", statement),
        Chunk("ACME_2018:p2:c1", "ACME_2018", 2, "Acme", "Capital expenditure total"),
        Chunk("ACME_2018:p3:c0", "ACME_2018", 3, "Acme", "Cash Flows:\nOperating activities"),
        Chunk("ACME_2018:p4:c0", "ACME_2018", 4, "Acme", "Notes", section="Cash flow hedges"),
        Chunk("ACME_2018:p5:c0", "ACME_2018", 5, "Acme", "Consolidated Balance Shee t\nTotal"),
        Chunk("ACME_2018:p6:c0", "ACME_2018", 6, "Acme", "Notes on the balance sheet total"),
        # A section ending in a word, a text opening on a lone letter: never glued together.
        Chunk("ACME_2018:p7:c0", "ACME_2018", 7, "Acme", "t Leases of plants", "Notes financials"),
        Chunk("ACME_2018:p8:c0", "ACME_2018", 8, "Acme", "Statements of Operations\nRevenue total"),
        Chunk("ACME_2018:p9:c0", "ACME_2018", 9, "Acme", "Notes\nRevenue on the income statement"),
    ]
    SearchIndex.build(docs).save(tmp_path / "index")
    # As the filings pack's agent reads it: a statement under its other names too.
    engine = reading_statement_names(SearchIndex.load(tmp_path / "index"))
    script = bundled_script(published)
    bundled = script.filings_names.reading_statement_names(
        script.search_index.SearchIndex.load(tmp_path / "index")
    )
    queries = [
        "[Acme 2018 | cash flow] capital expenditure",
        "[Acme | cash flow statement] capital expenditure",
        "[Acme | flows] capital",
        "[Acme | hedges] capital",
        "[Acme] capital expenditure",
        "[Acme | balance sheet] total",  # "Shee t" read as "Sheet"
        "[Acme | financials] plants",
        "[Acme | statement of financial position] total",  # the balance sheet
        "[Acme | P&L statement] revenue",  # the statement of operations, then the note
        "[Acme | income] revenue",
    ]
    for query in queries:
        expected = [h.chunk_id for h in engine.search(query, k=5)]
        assert [h.chunk_id for h in bundled.search(query, k=5)] == expected, query
    hits = engine.search(queries[0], k=5)
    assert hits[0].score < max(h.score for h in hits), "the test would not see titles ignored"
    # The standalone search is the engine's own, statements' names and all.
    assert bundled_script(published).filings_names.STATEMENT_NAMES == STATEMENT_NAMES


def test_the_bundled_script_shows_results_as_the_engine_does(published):
    from engine.agent.tool import fit_hits

    run_agent = bundled_script(published)
    bundled = run_agent.search_index.SearchIndex.load(published / "agent" / "index")
    engine = SearchIndex.load(published / "agent" / "index")
    tokenizer = tiny_tokenizer()

    def encode(text):
        return tokenizer.encode(text, add_special_tokens=False)

    long_page = "\n".join(["Acme annual filing", *(f"row {i} of figures" for i in range(40))])
    long_page += "\nrevenue was seven"
    hit = run_agent.search_index.SearchHit("acme-9", 1.0, "acme-10k", 9, "acme", long_page)
    engine_hit = SearchHit("acme-9", 1.0, "acme-10k", 9, "acme", long_page)
    for room in (12, 30, 60, 400):
        for query in ("[acme] revenue", "figures row 3", ""):
            expected = fit_hits(
                [*engine.search(query or "revenue", k=2), engine_hit], room, encode, query
            )
            hits = bundled.search(query or "revenue", k=2)
            got = run_agent.agent_tool.fit_hits([*hits, hit], room, encode, query)
            assert got == expected, (room, query)  # the tokens, the ids shown, the cut
    shown = tokenizer.decode(fit_hits([engine_hit], 30, encode, "[acme] revenue")[0])
    assert "revenue was seven" in shown, "the test would not see a bundle that shows the top"


def test_the_bundled_script_shows_only_new_hits_as_the_engine_does(published):
    from engine.agent.tool import new_hits

    run_agent = bundled_script(published)
    bundled = run_agent.search_index.SearchIndex.load(published / "agent" / "index")
    engine = SearchIndex.load(published / "agent" / "index")
    seen_engine, seen_bundle = [], set()
    for query in ("annual filing", "annual filing", "[acme] annual filing", "annual filing"):
        expected = [h.chunk_id for h in new_hits(engine, query, 2, set(seen_engine))]
        got = [h.chunk_id for h in run_agent.agent_tool.new_hits(bundled, query, 2, seen_bundle)]
        assert got == expected, query
        seen_engine += expected
        seen_bundle.update(got)
    assert len(set(seen_engine)) == len(seen_engine) == 7, "a hit shown twice, or too few"


def test_the_bundled_script_reads_a_scope_naming_several_companies_as_the_engine_does(
    published, tmp_path
):
    from tests.helpers.search import AMERICANS

    run_agent = bundled_script(published)
    engine = SearchIndex.build(AMERICANS)
    bundled = run_agent.search_index.SearchIndex.load(engine.save(tmp_path / "americans"))
    asked = [
        "",
        "Which debt securities are registered under American Express' name?",
        "Did American Water Works register any debt securities in 2022?",
        "Which debt securities does Amcor list?",
        "Are American Express' debt securities listed in american markets?",
        "which debt securities does american water works list?",
    ]
    for question in asked:
        assert bundled.companies_asked(question) == engine.companies_asked(question)
        for query in ("[AMER 2022] debt securities", "[AM] debt", "[Amcor] debt", "debt"):
            expected = [h.chunk_id for h in engine.search(query, k=3, question=question)]
            got = [
                h.chunk_id
                for h in run_agent.agent_tool.new_hits(bundled, query, 3, set(), question)
            ]
            assert got == expected, (query, question)
    narrowed = engine.search("[AMER 2022] debt", k=3, question=asked[1])
    assert [h.chunk_id for h in narrowed] == ["ax"], "the test would not see a bundle that widens"


def test_the_bundled_script_searches_a_scope_alone_as_the_engine_does(published):
    from tests.helpers.protocol import QUESTION, SEARCHES

    run_agent = bundled_script(published)
    for written, _ in SEARCHES:
        expected = searched_query(written, QUESTION)
        assert run_agent.agent_protocol.searched_query(written, QUESTION) == expected, written


def test_the_bundled_script_shows_as_many_hits_a_search_as_the_engine(published):
    from dataclasses import asdict

    from engine.agent.trajectory import Limits

    run_agent = bundled_script(published)
    for limits in (
        Limits(results_per_search=3),
        Limits(results_per_search=3, first_results_per_search=2),
    ):
        saved = asdict(limits)
        for searches_run in (0, 1, 2):
            assert run_agent.hits_for(saved, searches_run) == limits.hits_for(searches_run)
    older = {"results_per_search": 3}  # an agent saved before the first search's own number
    assert run_agent.hits_for(older, 0) == 3


def test_the_bundled_script_reads_stored_limits_as_the_engine_does(published):
    from dataclasses import asdict

    from engine.agent.trajectory import Limits

    run_agent = bundled_script(published)
    for stored in (
        {"results_per_search": 3},  # saved before the statement names left the index
        {"grounded_scope": True, "answer_form": True},  # before two rules were split
        asdict(Limits()),
        asdict(Limits(statement_synonyms=True)),
    ):
        engine = asdict(Limits.stored(stored))
        script = run_agent.stored_limits(stored)
        for name in ("statement_synonyms", "latest_year_scope", "answer_tag"):
            assert script[name] == engine[name], (stored, name)
    assert run_agent.stored_limits({})["statement_synonyms"] is True
    assert run_agent.stored_limits(asdict(Limits()))["statement_synonyms"] is False


def test_the_bundled_script_closes_a_cut_turn_as_the_engine_does(published):
    from tests.helpers.protocol import CUT_TURNS

    run_agent = bundled_script(published)
    for text in CUT_TURNS:
        assert run_agent.agent_protocol.closing_tag(text) == closing_tag(text), text


def _definitions(source: str) -> dict[str, str]:
    """A module's top-level definitions by name, as source without comments."""
    found = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = ast.unparse(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        found[name.id] = ast.unparse(node)
    return found


@pytest.mark.parametrize("module", sorted(BUNDLED_MODULES))
def test_the_published_rules_are_the_engines_own_and_stand_alone(published, module):
    import importlib
    import inspect

    bundled = (published / "agent" / BUNDLED_MODULES[module]).read_text()
    engine = inspect.getsource(importlib.import_module(module))

    # No second copy: every definition of the engine's module, as written there.
    definitions = _definitions(bundled)
    for name, source in _definitions(engine).items():
        assert definitions.get(name) == source, name
    # Standalone: nothing imported from the engine when it runs.
    imported = [
        node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
        for node in ast.parse(bundled).body
        if isinstance(node, ast.Import | ast.ImportFrom)
    ]
    assert not [name for name in imported if name and name.split(".")[0] == "engine"]


def test_the_bundled_scripts_logits_processor_masks_inside_the_answer_only(published):
    import torch

    from tests.helpers.models import char_tokenizer

    run_agent = bundled_script(published)
    tokenizer = char_tokenizer()
    shown = run_agent.grounding.ShownFigures.of("assets 59,268")

    def allowed(text: str) -> set[str]:
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
        grounded = run_agent._GroundedFigures(tokenizer, 0, shown, None, {})
        scores = grounded(ids, torch.zeros(1, len(tokenizer)))
        return {tokenizer.decode([i]) for i in torch.isfinite(scores[0]).nonzero()[:, 0].tolist()}

    assert allowed("<answer>$59,2") == {"6"}
    assert len(allowed("<search>$59,2")) == len(tokenizer)  # a query is the model's own
    assert "7" not in allowed("<answer>") and "5" in allowed("<answer>")


def test_the_bundled_script_quotes_a_rows_first_figure_as_the_engine_does(published):
    from engine.packs.filings.rows import ResultRows
    from tests.helpers.decoding import RESULTS, ROW_ANSWERS

    run_agent = bundled_script(published)
    engine, bundle = ResultRows.of(RESULTS), run_agent.filings_rows.ResultRows.of(RESULTS)
    for answer in ROW_ANSWERS:
        expected, got = engine.quoted(answer), bundle.quoted(answer)
        assert (got and got.figures) == (expected and expected.figures), answer


def test_the_bundled_scripts_logits_processor_quotes_a_row_alone_or_grounded(published):
    import torch

    from tests.helpers.decoding import RESULTS
    from tests.helpers.models import char_tokenizer

    run_agent = bundled_script(published)
    tokenizer = char_tokenizer()
    rows = run_agent.filings_rows.ResultRows.of(RESULTS)

    def allowed(text: str, shown_text=None) -> set[str]:
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
        shown = run_agent.grounding.ShownFigures.of(shown_text) if shown_text else None
        ruled = run_agent._GroundedFigures(tokenizer, 0, shown, rows, {})
        scores = ruled(ids, torch.zeros(1, len(tokenizer)))
        return {tokenizer.decode([i]) for i in torch.isfinite(scores[0]).nonzero()[:, 0].tolist()}

    digits = set("0123456789")
    assert allowed("<answer>Total assets $") & digits == {"2"}
    assert allowed("<answer>Total assets $", RESULTS) & digits == {"2"}  # the row, not any shown
    assert allowed("<answer>Yes ") >= digits  # no row quoted, nothing grounded: any figure
    assert allowed("<answer>Yes ", RESULTS) & digits < digits  # no row quoted: shown figures


def test_the_bundled_rules_decide_as_the_engines(published):
    from engine.agent.greedy_rules import (
        answer_tag_off,
        ends_in_loop,
        scope_uncopied,
        terms_uncopied,
    )
    from engine.packs.filings.decoding import (
        answer_not_yes_no,
        answer_off_form,
        asks_yes_no,
        scope_year_not_latest,
        statement_left,
    )
    from tests.helpers.decoding import (
        ANSWER_FORMS,
        ANSWER_TAGS,
        COPIED,
        EARLIER_YEAR,
        EBITDA,
        LATEST_YEAR,
        LOOPS,
        NAMED,
        NOT_LOOPS,
        OTHER_QUESTIONS,
        PEPSICO,
        PROFIT,
        QUESTION,
        SPAN,
        STATEMENT_KEPT,
        STATEMENT_LEFT,
        TERMS_COPIED,
        TERMS_UNCOPIED,
        UNCOPIED,
        UNNAMED,
        YES_NO_QUESTIONS,
    )

    rules = bundled_script(published).greedy_rules
    filings = sys.modules["filings_decoding"]  # the pack's rules, beside it, as it imports them
    for text in LOOPS + NOT_LOOPS:
        assert rules.ends_in_loop(text) == ends_in_loop(text), text
    for segment in UNCOPIED + COPIED:
        assert rules.scope_uncopied(segment, QUESTION) == scope_uncopied(segment, QUESTION)
    for segment in TERMS_UNCOPIED + TERMS_COPIED:
        ruled = terms_uncopied(segment, QUESTION)
        assert rules.terms_uncopied(segment, QUESTION) == ruled, segment
    for segment in EARLIER_YEAR + LATEST_YEAR:
        assert rules.scope_uncopied(segment, SPAN) == scope_uncopied(segment, SPAN), segment
        ruled = scope_year_not_latest(segment, SPAN)
        assert filings.scope_year_not_latest(segment, SPAN) == ruled, segment
    for segment in UNNAMED + NAMED:
        ruled = scope_uncopied(segment, EBITDA, PEPSICO)
        assert rules.scope_uncopied(segment, EBITDA, PEPSICO) == ruled, segment
    for question in YES_NO_QUESTIONS + OTHER_QUESTIONS:
        assert filings.asks_yes_no(question) == asks_yes_no(question), question
    for segment in ["<answer>", "<answer> Ye", "<answer>No.", "<answer>3M", "<answer>Nope"]:
        assert filings.answer_not_yes_no(segment) == answer_not_yes_no(segment), segment
    for segment, question, _ in ANSWER_FORMS:
        ruled = answer_off_form(segment, question)
        assert filings.answer_off_form(segment, question) == ruled, (segment, question)
    for segment, _ in ANSWER_TAGS:
        assert rules.answer_tag_off(segment) == answer_tag_off(segment), segment
    for question in (QUESTION, PROFIT, EBITDA):
        for segment in STATEMENT_LEFT + STATEMENT_KEPT + ["<search>[P 2022 | cash flow]"]:
            ruled = statement_left(segment, question)
            assert filings.statement_left(segment, question) == ruled, (segment, question)


def test_the_bundled_script_reads_the_companies_a_question_names_as_the_engine_does(published):
    from engine.agent.greedy_rules import companies_named

    run_agent = bundled_script(published)
    bundled = run_agent.search_index.SearchIndex.load(published / "agent" / "index")
    engine = SearchIndex.load(published / "agent" / "index")
    entities = sorted({c.entity for c in engine.chunks if c.entity})
    asked = (
        [q.question for q in questions()]
        + [f"What did {entity}'s FY2021 filing and Globx's report say?" for entity in entities]
        # a company's name as a common word: read beside a capitalised one, or alone
        + [f"Was {a}'s {b.lower()} spend higher?" for a in entities for b in entities]
        + [f"what did {entity.lower()} spend?" for entity in entities]
    )
    named = [companies_named(q, engine.names_company) for q in asked]
    assert all(named[len(questions()) :]), named  # each entity's own name, at least
    rules = run_agent.greedy_rules
    assert [rules.companies_named(q, bundled.names_company) for q in asked] == named


def test_the_bundled_scripts_greedy_rules_pass_over_a_token_that_breaks_one(published, monkeypatch):
    import torch

    from tests.helpers.decoding import CHOICE, QUESTION, YES_NO_QUESTIONS
    from tests.helpers.models import char_tokenizer, word_tokenizer

    run_agent = bundled_script(published)

    def picked(tokenizer, text, favoured, loops=True, scope=True, companies=frozenset()) -> str:
        scores = torch.zeros(1, len(tokenizer))
        for rank, token in enumerate(favoured):  # the first the likeliest
            scores[0, tokenizer.convert_tokens_to_ids(token)] = len(favoured) - rank
        ids = torch.tensor([tokenizer.encode(text, add_special_tokens=False)])
        limits = {"loop_guard": loops, "grounded_scope": scope}
        rules = run_agent._GreedyRules(tokenizer, 0, QUESTION, limits, companies)
        return tokenizer.convert_ids_to_tokens(int(rules(ids, scores)[0].argmax()))

    words, chars = word_tokenizer(), char_tokenizer()
    favoured = [" amount", " usd"]
    assert picked(words, "<search>capex amount", favoured) == " amount"
    assert picked(words, "<search>capex amount amount", favoured) == " usd"
    assert picked(words, "<search>capex amount amount", favoured, loops=False) == " amount"
    assert picked(chars, "<search>[P", ["f", "e"]) == "e"  # "Pf" is no piece of the question
    assert picked(chars, "<search>[P", ["f", "e"], scope=False) == "f"
    assert picked(chars, "<search>[Pepsi] P", ["f", "e"]) == "f"  # past the scope: free
    terms = run_agent._GreedyRules(chars, 0, QUESTION, {"grounded_terms": True})
    scores = torch.zeros(1, len(chars))
    scores[0, chars.convert_tokens_to_ids("f")] = 2.0
    scores[0, chars.convert_tokens_to_ids("e")] = 1.0
    typed = torch.tensor([chars.encode("<search>[Pepsi] P", add_special_tokens=False)])
    assert chars.convert_ids_to_tokens(int(terms(typed, scores)[0].argmax())) == "e"
    # past them, the rest in rank order
    monkeypatch.setattr(run_agent.greedy_rules, "CANDIDATES", 1)
    assert chars.convert_ids_to_tokens(int(terms(typed, scores)[0].argmax())) == "e"
    # "FY2021Q4" is a piece of the question, but no company: "PepsiCo" is
    assert picked(chars, "<search>[", ["F", "P"]) == "F"
    assert picked(chars, "<search>[", ["F", "P"], companies=frozenset({"pepsico"})) == "P"
    # a question that asks yes or no ("Is 3M a capital-intensive business…?") is answered so
    yes_no = run_agent._GreedyRules(chars, 0, YES_NO_QUESTIONS[0], {"yes_no_answers": True})
    scores = torch.zeros(1, len(chars))
    scores[0, chars.convert_tokens_to_ids("3")] = 2.0
    scores[0, chars.convert_tokens_to_ids("N")] = 1.0
    answer = torch.tensor([chars.encode("<answer>", add_special_tokens=False)])
    assert chars.convert_ids_to_tokens(int(yes_no(answer, scores)[0].argmax())) == "N"
    # a question offering a choice is answered with one of its options
    choice = run_agent._GreedyRules(chars, 0, CHOICE, {"answer_form": True})
    scores[0, chars.convert_tokens_to_ids("d")] = 0.5
    assert chars.convert_ids_to_tokens(int(choice(answer, scores)[0].argmax())) == "d"
    # a search after the first, for a question naming a statement, is filtered to it
    later = torch.tensor([chars.encode("<search>[PepsiCo 2021 | ", add_special_tokens=False)])
    for searched, favoured in ((1, "c"), (0, "p")):
        rules = run_agent._GreedyRules(
            chars, 0, QUESTION, {"statement_filter": True}, searched=searched
        )
        scores = torch.zeros(1, len(chars))
        scores[0, chars.convert_tokens_to_ids("p")] = 2.0
        scores[0, chars.convert_tokens_to_ids("c")] = 1.0
        assert chars.convert_ids_to_tokens(int(rules(later, scores)[0].argmax())) == favoured


def test_the_bundled_script_runs_the_agent_loop_on_a_question(published):
    result = subprocess.run(
        [sys.executable, str(published / "agent" / "run_agent.py"), "what was acme revenue ?"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr
    output = json.loads(result.stdout)
    assert set(output) == {"answer", "searches", "transcript"}
    assert output["transcript"]


def test_the_archive_unpacks_to_the_same_folder(published, tmp_path):
    archive = make_archive(published, tmp_path / "acme-agent.tar.gz")
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path / "out", filter="data")
    assert (tmp_path / "out" / "acme-agent" / "agent" / "run_agent.py").is_file()
    assert (tmp_path / "out" / "acme-agent" / "model.safetensors").is_file()
