"""The agent protocol parser: what one model segment asks for."""

from engine.agent.protocol import (
    ANSWER_STOP_STRINGS,
    closing_tag,
    normalize_query,
    parse_segment,
    searched_query,
    segment_stopped,
    written_query,
)
from tests.helpers.protocol import CUT_TURNS, QUESTION, SEARCHES


def test_a_closed_search_tag_is_a_search_with_its_query():
    segment = parse_segment("I will look. <search> 3M capex 2018 </search>", ended_by_eos=False)
    assert (segment.kind, segment.text) == ("search", "3M capex 2018")


def test_a_closed_answer_tag_is_the_answer():
    segment = parse_segment("<answer>$1,577 million</answer>", ended_by_eos=False)
    assert (segment.kind, segment.text) == ("answer", "$1,577 million")


def test_a_search_close_without_open_is_a_malformed_call():
    assert parse_segment("capex 2018</search>", ended_by_eos=False).kind == "malformed_call"


def test_an_empty_query_is_a_malformed_call():
    assert parse_segment("<search>  </search>", ended_by_eos=False).kind == "malformed_call"


def test_an_answer_close_without_open_is_malformed():
    assert parse_segment("42</answer>", ended_by_eos=False).kind == "malformed"


def test_an_unclosed_tag_at_end_of_sequence_is_malformed():
    assert parse_segment("<search>capex", ended_by_eos=True).kind == "malformed"
    assert parse_segment("<answer>42", ended_by_eos=True).kind == "malformed"


def test_plain_text_at_end_of_sequence_is_no_answer():
    assert parse_segment("The answer is 42.", ended_by_eos=True).kind == "no_answer"


def test_text_cut_before_any_tag_closes_is_unfinished():
    assert parse_segment("<search>capex", ended_by_eos=False).kind == "unfinished"


def test_the_first_closing_tag_decides():
    segment = parse_segment("<answer>7</answer><search>x</search>", ended_by_eos=False)
    assert (segment.kind, segment.text) == ("answer", "7")


def test_an_answer_opened_by_the_harness_ends_at_end_of_sequence():
    segment = parse_segment(" 42 dollars", ended_by_eos=True, answer_opened=True)
    assert (segment.kind, segment.text) == ("answer", "42 dollars")


def test_query_echo_ignores_case_spacing_and_a_scope():
    assert normalize_query("What  is\nCapex?") == normalize_query("what is capex?")
    assert normalize_query("[3M 2018] What is capex?") == normalize_query("what is capex?")
    assert normalize_query("What is capex? [3M]") != normalize_query("what is capex?")


def test_an_answer_opened_by_the_harness_ends_with_its_first_line():
    segment = parse_segment(
        "\n 42 dollars\nThe 2018 report", ended_by_eos=False, answer_opened=True
    )
    assert (segment.kind, segment.text) == ("answer", "42 dollars")


def test_a_leading_newline_does_not_stop_an_opened_answer():
    assert not segment_stopped("\n", "\n", ANSWER_STOP_STRINGS)
    assert segment_stopped("\n42\n", "\n42\n", ANSWER_STOP_STRINGS)


def test_a_cut_turn_is_closed_with_the_tag_it_left_open():
    for text, close in CUT_TURNS.items():
        assert closing_tag(text) == close, text
        if close:
            kind = parse_segment(text + close, ended_by_eos=False).kind
            assert kind == close.strip("</>"), text


def test_a_scope_alone_searches_the_question_within_it():
    for written, searched in SEARCHES:
        assert searched_query(written, QUESTION) == searched, written


def test_the_teacher_writes_the_scoped_question_as_its_scope_alone():
    assert written_query(f"[3M 2018] {QUESTION}", QUESTION) == "[3M 2018]"
    assert written_query(f"[3M 2018 | cash] {QUESTION}", QUESTION) == "[3M 2018 | cash]"
    for query in ("[3M 2018] capital expenditure", QUESTION, f"[3M] {QUESTION} Answer: 7"):
        assert written_query(query, QUESTION) == query
    for query in ("[3M 2018]", f"[3M 2018] {QUESTION}", "[3M 2018] capex"):
        # What the teacher writes searches what the teacher meant.
        written = written_query(query, QUESTION)
        assert searched_query(written, QUESTION) == searched_query(query, QUESTION)


def test_empty_brackets_search_the_question_itself_everywhere():
    from engine.agent.protocol import searched_query

    question = "What exception does a failing assert statement raise?"
    assert searched_query("[]", question) == question
    assert searched_query(" [] ", question) == question
    assert searched_query("[ ]", question) == question  # a word-level tokenizer's decoding
    assert searched_query("[] raise", question) == "[] raise"  # words after: a query of its own
