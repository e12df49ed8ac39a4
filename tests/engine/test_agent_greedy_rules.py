"""Rules of greedy decoding: with `Limits.loop_guard` no run of words written three times in a
row, with `Limits.grounded_scope` a search's scope writes only pieces of the question's words
and, where the question names a company of the index, begins with it; with
`Limits.grounded_terms` the words it searches for after the scope are the question's, each once;
with `Limits.answer_tag` an answer closes with its own tag. The filings pack's: with
`Limits.latest_year_scope` a scope writes no year but the latest the question names; with
`Limits.yes_no_answers` a question that asks yes or no is answered Yes or No first; with
`Limits.statement_filter` a search after the first filters its pages to the financial statement
the question names; with `Limits.answer_form` a question offering two options is answered with
one of them, and one opening with a question word never Yes or No; sampling is never ruled.

Each rule on its own, then in the hf engine: a random tiny model made to favour " amount" falls
into word loops greedily ("amount0<answer> amount0<answer> …"), and guarded, into none; a
scope's likeliest letter that the question does not go on with is passed over."""

import dataclasses

import pytest
import torch

from engine.agent.greedy_rules import (
    FIGURE_RULES,
    RULES,
    answer_tag_off,
    broken,
    companies_named,
    ends_in_loop,
    masks_tokens,
    rules_on,
    scope_uncopied,
    terms_uncopied,
    unruled,
)
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.trajectory import Limits, SamplingParams
from engine.packs.filings.decoding import (
    answer_not_yes_no,
    answer_off_form,
    asks_what,
    asks_yes_no,
    offered_options,
    scope_year_not_latest,
    statement_left,
    statement_words,
)
from tests.helpers.decoding import (
    ANSWER_FORMS,
    ANSWER_TAGS,
    CHOICE,
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
    WHY,
    YES_NO_QUESTIONS,
    FiguresIndex,
    loops_in,
    make_looping_model,
    segments,
)
from tests.helpers.models import ONE_LAYER, char_tokenizer, tiny_llama


@pytest.mark.parametrize("text", LOOPS)
def test_a_run_of_words_written_three_times_in_a_row_is_a_loop(text):
    assert ends_in_loop(text)


@pytest.mark.parametrize("text", NOT_LOOPS)
def test_repeats_that_are_no_loop(text):
    assert not ends_in_loop(text)


@pytest.mark.parametrize("segment", UNCOPIED)
def test_a_scope_word_that_is_no_piece_of_the_question_is_uncopied(segment):
    assert scope_uncopied(segment, QUESTION)


@pytest.mark.parametrize("segment", COPIED)
def test_a_scope_of_the_questions_own_words_is_copied(segment):
    assert not scope_uncopied(segment, QUESTION)


@pytest.mark.parametrize("segment", TERMS_UNCOPIED)
def test_a_search_term_that_is_none_of_the_questions_words_or_written_twice(segment):
    assert terms_uncopied(segment, QUESTION)


@pytest.mark.parametrize("segment", TERMS_COPIED)
def test_search_terms_of_the_questions_own_words_each_once(segment):
    assert not terms_uncopied(segment, QUESTION)


def test_greedy_decoding_searches_for_the_questions_words_once_each():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    logits = torch.zeros(1, len(tokenizer))
    r, a = tokenizer.convert_tokens_to_ids(["r", "a"])
    logits[:, r], logits[:, a] = 2.0, 1.0
    typed = tokenizer.encode("<search>[PepsiCo 2021] capex c", add_special_tokens=False)
    for on, favoured in ((True, a), (False, r)):  # "cr" begins no word of the question
        limits = Limits(grounded_terms=on)
        engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
        assert engine._rule(logits, [(QUESTION, typed, 1)])[0].argmax() == favoured


def test_a_step_goes_down_the_whole_vocabulary_past_its_likeliest_candidates(monkeypatch):
    # proof104's student ranked the "t" finishing "percen" 15,290th: past the candidates a
    # step tries first, the rest of the vocabulary is tried in rank order
    from engine.agent import greedy_rules

    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    logits = torch.zeros(1, len(tokenizer))
    r, q, a = tokenizer.convert_tokens_to_ids(["r", "q", "a"])
    logits[:, r], logits[:, q], logits[:, a] = 3.0, 2.0, 1.0
    typed = tokenizer.encode("<search>[PepsiCo 2021] capex c", add_special_tokens=False)
    engine = HFRolloutEngine(
        model, tokenizer, FiguresIndex(), limits=Limits(grounded_terms=True), system_prompt="s"
    )
    monkeypatch.setattr(greedy_rules, "CANDIDATES", 2)  # "r" and "q": both break the rule
    assert list(greedy_rules.ranked_tokens(logits[0]))[:3] == [r, q, a]
    assert engine._rule(logits, [(QUESTION, typed, 1)])[0].argmax() == a  # "ca" of "cash"


@pytest.mark.parametrize("segment", EARLIER_YEAR)
def test_a_scope_year_other_than_the_latest_the_question_names_is_refused(segment):
    assert scope_year_not_latest(segment, SPAN)
    assert broken(segment, SPAN, Limits(latest_year_scope=True))


@pytest.mark.parametrize("segment", LATEST_YEAR)
def test_a_scope_of_the_latest_year_the_question_names_is_kept(segment):
    assert not scope_year_not_latest(segment, SPAN)
    assert not broken(segment, SPAN, Limits(grounded_scope=True, latest_year_scope=True))


def test_the_generic_scope_rule_assumes_no_year_convention():
    # The question's own year, the first it names, is a piece of its words: only the
    # filings pack holds a scope to the latest.
    assert not scope_uncopied("<search>[Walmart 2018]", SPAN)
    assert not broken("<search>[Walmart 2018]", SPAN, Limits(grounded_scope=True))


@pytest.mark.parametrize("segment", UNNAMED)
def test_a_scope_that_begins_with_no_company_the_question_names_is_uncopied(segment):
    assert scope_uncopied(segment, EBITDA, PEPSICO)


@pytest.mark.parametrize("segment", NAMED)
def test_a_scope_that_begins_with_the_questions_company_is_copied(segment):
    assert not scope_uncopied(segment, EBITDA, PEPSICO)


def test_a_question_that_names_no_company_leaves_the_scope_to_its_words():
    question = "What drove the reduction in SG&A expense as a percent of net sales in FY2023?"
    companies = companies_named(question, NamedIndex().names_company)
    assert companies == frozenset()
    assert not scope_uncopied("<search>[SG&A 2023]", question, companies)


class NamedIndex(FiguresIndex):
    """A search tool that knows its companies, as a `SearchIndex` does."""

    def names_company(self, word: str) -> bool:
        return any(name.startswith(word) for name in ("pepsico", "pfizer", "amcor"))


def test_the_companies_a_question_names_are_its_words_that_name_one():
    question = "Did PepsiCo's FY2022 capex, per Pfizer's 2022 10-K, exceed 2 billion?"
    assert companies_named(question, NamedIndex().names_company) == {"pepsico", "pfizer"}


def test_a_common_word_names_a_company_only_where_no_word_written_as_a_name_does():
    names_company = NamedIndex().names_company  # knows PepsiCo, Pfizer, Amcor ("am…")
    assert companies_named("Did PepsiCo's profit, as I am told, grow?", names_company) == {
        "pepsico"
    }
    # Typed in lower case, the question is read whole.
    assert companies_named("did pepsico's profit, as i am told, grow?", names_company) == {
        "pepsico",
        "am",
    }


def test_greedy_decoding_begins_a_scope_with_the_company_its_tool_knows():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    limits = Limits(grounded_scope=True)
    logits = torch.zeros(1, len(tokenizer))
    f, p = tokenizer.convert_tokens_to_ids(["F", "P"])
    logits[:, f], logits[:, p] = 2.0, 1.0
    typed = tokenizer.encode("<search>[", add_special_tokens=False)
    for tool, favoured in ((NamedIndex(), p), (FiguresIndex(), f)):  # FiguresIndex knows none
        engine = HFRolloutEngine(model, tokenizer, tool, limits=limits, system_prompt="s")
        assert engine._rule(logits, [(EBITDA, typed)])[0].argmax() == favoured


def test_greedy_decoding_finds_the_company_however_far_down_the_model_ranks_it():
    """proof78's student, sure of "A.P." for American Express, ranked no token that goes on
    to the company among its 64 likeliest, and the rule gave up: "[A.P. 2021]" searched
    Activision's, Adobe's and Amcor's filings. The rule looks further down (`CANDIDATES`)."""
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    limits = Limits(grounded_scope=True)
    engine = HFRolloutEngine(model, tokenizer, NamedIndex(), limits=limits, system_prompt="s")
    typed = tokenizer.encode("<search>[", add_special_tokens=False)
    p = tokenizer.convert_tokens_to_ids("P")
    logits = torch.full((1, len(tokenizer)), -10.0)
    wrong = [
        token
        for token in range(len(tokenizer))
        if broken(tokenizer.decode([*typed, token]), EBITDA, limits, PEPSICO)
    ]
    logits[0, wrong] = 10.0 + torch.arange(len(wrong)) / len(wrong)  # all likelier than "P"
    logits[0, p] = 0.0
    assert len(wrong) > 64
    assert engine._rule(logits, [(EBITDA, typed)])[0].argmax() == p


@pytest.mark.parametrize("question", YES_NO_QUESTIONS)
def test_a_question_opening_with_an_auxiliary_verb_asks_yes_or_no(question):
    assert asks_yes_no(question)


@pytest.mark.parametrize("question", OTHER_QUESTIONS)
def test_a_question_offering_a_choice_or_asking_what_asks_no_yes_or_no(question):
    assert not asks_yes_no(question)


@pytest.mark.parametrize(
    ("segment", "off"),
    [
        ("<answer>", False),
        ("<answer> Ye", False),  # on its way to "Yes"
        ("<answer>N", False),
        ("<answer>Yes, capex fell", False),
        ("<answer>no.", False),
        ("<answer>No</answer>", False),
        ("<answer>3M", True),  # proof63's answer to "Is 3M a capital-intensive business…?"
        ("<answer>$1.3 billion", True),
        ("<answer>Nope", True),
        ("<answer>Yesterday", True),
        ("<answer></answer>", True),
        ("<search>[3M 2022] capex", False),  # not an answer
    ],
)
def test_an_answer_that_opens_with_a_word_other_than_yes_or_no(segment, off):
    assert answer_not_yes_no(segment) == off


def test_greedy_decoding_answers_a_yes_or_no_question_yes_or_no():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    logits = torch.zeros(2, len(tokenizer))
    three, n = tokenizer.convert_tokens_to_ids(["3", "N"])
    logits[:, three], logits[:, n] = 2.0, 1.0
    typed = tokenizer.encode("<answer>", add_special_tokens=False)
    rows = [(YES_NO_QUESTIONS[0], typed), (OTHER_QUESTIONS[1], typed)]
    for on, favoured in ((True, [n, three]), (False, [three, three])):
        limits = Limits(yes_no_answers=on)
        engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
        assert engine._rule(logits, rows).argmax(-1).tolist() == favoured


def test_greedy_decoding_passes_over_a_scope_letter_the_question_does_not_go_on_with():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    limits = Limits(grounded_scope=True)
    engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
    logits = torch.zeros(2, len(tokenizer))
    f, e = tokenizer.convert_tokens_to_ids(["f", "e"])
    logits[:, f], logits[:, e] = 2.0, 1.0
    typed = tokenizer.encode("<search>[P", add_special_tokens=False)
    ruled = engine._rule(logits, [(QUESTION, typed), ("What was Pfizer's capex?", typed)])
    assert ruled[0].argmax() == e  # "Pf" is no piece of a question about PepsiCo
    assert ruled[1].argmax() == f  # and is of one about Pfizer


@pytest.mark.parametrize("segment", STATEMENT_LEFT)
def test_a_later_search_that_leaves_the_statement_the_question_names(segment):
    assert statement_left(segment, QUESTION)


@pytest.mark.parametrize("segment", STATEMENT_KEPT)
def test_a_later_search_within_the_statement_the_question_names(segment):
    assert not statement_left(segment, QUESTION)


def test_the_statements_a_question_names_are_all_of_them_a_plural_s_aside():
    assert statement_words(PROFIT) == {"income", "statement", "of", "cash", "flows"}
    assert not statement_left("<search>[PepsiCo 2022 | income]", PROFIT)
    assert not statement_left("<search>[PepsiCo 2022 | cash flow]", PROFIT)  # of "flows"
    assert statement_left("<search>[PepsiCo 2022 | cash flowing]", PROFIT)


def test_a_question_that_names_no_statement_leaves_the_filter_free():
    assert statement_words(EBITDA) == frozenset()
    assert not statement_left("<search>[PepsiCo 2022] capex", EBITDA)
    assert not statement_left("<search>[PepsiCo 2022 | p7] capex", EBITDA)


def test_greedy_decoding_filters_a_later_search_to_the_statement_the_question_names():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    logits = torch.zeros(1, len(tokenizer))
    p, c = tokenizer.convert_tokens_to_ids(["p", "c"])
    logits[:, p], logits[:, c] = 2.0, 1.0
    typed = tokenizer.encode("<search>[PepsiCo 2021 | ", add_special_tokens=False)
    for on, searched, favoured in ((True, 1, c), (True, 0, p), (False, 1, p)):
        limits = Limits(statement_filter=on)
        engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
        assert engine._rule(logits, [(QUESTION, typed, searched)])[0].argmax() == favoured


@pytest.fixture(scope="module")
def looping_model():
    return make_looping_model()


def test_greedy_decoding_guarded_writes_no_word_loop(looping_model):
    greedy = SamplingParams(temperature=0.0)
    unguarded = segments(looping_model, False, greedy)
    assert all(loops_in(text) for text in unguarded), unguarded

    guarded = segments(looping_model, True, greedy)
    assert all(len(text.split()) >= 6 for text in guarded), guarded  # it still writes words
    assert not any(loops_in(text) for text in guarded), guarded


def test_sampling_is_never_guarded(looping_model):
    sampled = SamplingParams(temperature=1.0, seed=3)
    assert segments(looping_model, True, sampled) == segments(looping_model, False, sampled)


@pytest.mark.parametrize(
    ("question", "options"),
    [
        (CHOICE, ("increase", "decrease")),
        (
            "Has AMCOR's quick ratio improved or declined between FY2023 and FY2022?",
            ("improved", "declined"),
        ),
        (YES_NO_QUESTIONS[0], None),  # a yes or no, no choice
        ("What was the revenue or the profit of 3M in 2022?", None),  # opens as no yes-or-no does
        ("Is revenue higher? Or profit?", None),  # only the first sentence
        ("Assume you are an analyst: did wages increase or decrease?", ("increase", "decrease")),
    ],
)
def test_the_two_options_a_question_offers(question, options):
    assert offered_options(question) == options


@pytest.mark.parametrize(("segment", "question", "off"), ANSWER_FORMS)
def test_an_answer_not_of_the_form_its_question_asks(segment, question, off):
    assert answer_off_form(segment, question) == off


@pytest.mark.parametrize(("segment", "off"), ANSWER_TAGS)
def test_an_answer_closed_by_another_tag_than_its_own(segment, off):
    assert answer_tag_off(segment) == off
    assert broken(segment, CHOICE, Limits(answer_tag=True)) == off


def test_the_generic_answer_rule_assumes_no_question_form():
    # "Yes" to a what-question and a figure to a why-question are the filings pack's to refuse.
    for segment, question in (("<answer>Yes", WHY), ("<answer>12.4%", CHOICE)):
        assert answer_off_form(segment, question)
        assert not broken(segment, question, Limits(answer_tag=True))


@pytest.mark.parametrize(
    ("question", "what"),
    [
        (WHY, True),
        ("What is Best Buy's FY2019 inventory?", True),
        ("In 2022 Q2, which of JPM's business segments had the highest net income?", True),
        ("how much did 3M spend?", True),
        ("As of FY2023Q1, by how many percentage points did Pepsico raise guidance?", True),
        (OTHER_QUESTIONS[-2], True),
        (YES_NO_QUESTIONS[-2], False),
        (CHOICE, False),
        (YES_NO_QUESTIONS[0], False),
        ("Whatever the year, did 3M grow?", False),  # a word that begins with one is none
    ],
)
def test_a_question_opening_with_a_question_word(question, what):
    assert asks_what(question) == what


def test_greedy_decoding_answers_a_what_question_but_yes_and_a_choice_with_an_option():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER)
    logits = torch.zeros(2, len(tokenizer))
    s, t, y, d = tokenizer.convert_tokens_to_ids(["s", "t", "Y", "d"])
    logits[0, s], logits[0, t] = 2.0, 1.0  # "Yes" likelier than "Yet" to a why question
    logits[1, y], logits[1, d] = 2.0, 1.0  # "Y" likelier than "d" to a choice
    rows = [
        (WHY, tokenizer.encode("<answer>Ye", add_special_tokens=False)),
        (CHOICE, tokenizer.encode("<answer>", add_special_tokens=False)),
    ]
    for on, favoured in ((True, [t, d]), (False, [s, y])):
        engine = HFRolloutEngine(
            model, tokenizer, FiguresIndex(), limits=Limits(answer_form=on), system_prompt="s"
        )
        assert engine._rule(logits, rows).argmax(-1).tolist() == favoured


def test_the_trainers_rollouts_run_with_every_rule_off():
    ruled = Limits(**dict.fromkeys(RULES, True), max_turns=2)
    assert rules_on(ruled)
    assert not rules_on(unruled(ruled))
    assert unruled(ruled).max_turns == 2
    assert set(RULES) <= {f.name for f in dataclasses.fields(Limits)}


def test_figure_rules_mask_tokens_and_the_trainers_rollouts_run_without_them():
    for rule in FIGURE_RULES:
        figured = Limits(**{rule: True})
        assert masks_tokens(figured) and not rules_on(figured)
        assert not masks_tokens(unruled(figured))
    assert not masks_tokens(Limits())
    assert set(FIGURE_RULES) <= {f.name for f in dataclasses.fields(Limits)}
