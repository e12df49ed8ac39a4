"""The agent's tag parser, whatever a model writes: parse_segment returns a Segment of a
known kind and never raises (hypothesis generates the segments from the protocol's tags)."""

from typing import get_args

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.agent.protocol import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    SEARCH_CLOSE,
    SEARCH_OPEN,
    Segment,
    SegmentKind,
    normalize_query,
    parse_segment,
)

PROPERTY = settings(max_examples=200, deadline=None, database=None)

# Model output is mostly tags, brackets and whitespace in odd orders, with some text between.
PIECES = st.sampled_from(
    [
        SEARCH_OPEN,
        SEARCH_CLOSE,
        ANSWER_OPEN,
        ANSWER_CLOSE,
        "<results>",
        "</results>",
        "<search",
        "</answer",
        "[",
        "]",
        "[3M 2018]",
        "\n",
        " ",
        "\x00",
        "\ud800",
    ]
)
SEGMENTS = st.lists(PIECES | st.text(max_size=12), max_size=12).map("".join)
KINDS = set(get_args(SegmentKind))


@PROPERTY
@given(text=SEGMENTS, ended_by_eos=st.booleans(), answer_opened=st.booleans())
@example(text="", ended_by_eos=True, answer_opened=False)
@example(text="</answer><answer>", ended_by_eos=False, answer_opened=False)
@example(text="<search>[]</search>", ended_by_eos=False, answer_opened=False)
def test_any_segment_parses_to_a_known_kind(text, ended_by_eos, answer_opened):
    segment = parse_segment(text, ended_by_eos=ended_by_eos, answer_opened=answer_opened)

    assert isinstance(segment, Segment) and segment.kind in KINDS


@PROPERTY
@given(text=SEGMENTS, ended_by_eos=st.booleans())
def test_a_search_is_a_nonempty_query_free_of_tags(text, ended_by_eos):
    segment = parse_segment(text, ended_by_eos=ended_by_eos)

    if segment.kind == "search":
        assert segment.text == segment.text.strip() != ""
        assert not any(tag in segment.text for tag in (SEARCH_OPEN, SEARCH_CLOSE, ANSWER_OPEN))
        assert ANSWER_CLOSE not in segment.text
        assert isinstance(normalize_query(segment.text), str)


@PROPERTY
@given(text=SEGMENTS, ended_by_eos=st.booleans(), answer_opened=st.booleans())
def test_an_answer_holds_no_closing_tag(text, ended_by_eos, answer_opened):
    segment = parse_segment(text, ended_by_eos=ended_by_eos, answer_opened=answer_opened)

    if segment.kind == "answer":
        assert ANSWER_CLOSE not in segment.text and segment.text == segment.text.strip()
        if answer_opened:
            assert "\n" not in segment.text  # an opened answer ends at its first line


@PROPERTY
@given(text=SEGMENTS)
def test_a_segment_that_has_not_ended_is_unfinished_until_a_tag_closes(text):
    segment = parse_segment(text, ended_by_eos=False)

    if SEARCH_CLOSE not in text and ANSWER_CLOSE not in text:
        assert segment.kind == "unfinished"
