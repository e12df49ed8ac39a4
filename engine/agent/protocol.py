"""The agent protocol: the tags the model writes, the prompt that teaches them, and the
parser that reads one model segment.

A segment is what the model writes between two tool calls. It ends at `</search>` (the
engine runs the query and appends `<results>…</results>`), at `</answer>` (the trajectory
is done), or at the end-of-sequence token.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from engine.search.index import split_scope

SEARCH_OPEN, SEARCH_CLOSE = "<search>", "</search>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
RESULTS_OPEN, RESULTS_CLOSE = "<results>", "</results>"
STOP_STRINGS = (SEARCH_CLOSE, ANSWER_CLOSE)
# When the harness opened the answer, the answer also ends at the end of its first line:
# small models rarely close a tag they did not open, and ramble on instead.
ANSWER_STOP_STRINGS = (ANSWER_CLOSE, "\n")

SYSTEM_PROMPT = (
    "You answer questions about a collection of documents by searching it.\n"
    "To search, write <search>your query</search> and stop; the search results will "
    "appear between <results> and </results>. You may search several times with "
    "different queries. To search only some documents, begin the query with words of "
    "their names in brackets, as the question writes them: <search>[name] key words"
    "</search>; the brackets alone, <search>[name]</search>, search the question itself in "
    "those documents; to search only the part of a document the question names, add its "
    "words for that part after a bar: <search>[name | part] key words</search>. "
    "When you know the answer, write it as <answer>short answer"
    "</answer>. Keep the answer short: a number with its unit, a name, or yes/no."
)


def build_messages(question: str, system_prompt: str = SYSTEM_PROMPT) -> list[dict[str, str]]:
    """The chat messages that start every trajectory."""
    return [
        {"role": "system", "content": system_prompt},
        {"role": "user", "content": question},
    ]


def format_results(text: str) -> str:
    """Wrap the tool's text the way the model sees it after `</search>`."""
    return f"\n{RESULTS_OPEN}\n{text}\n{RESULTS_CLOSE}\n"


SegmentKind = Literal["search", "malformed_call", "answer", "malformed", "no_answer", "unfinished"]


@dataclass(frozen=True)
class Segment:
    """What one model segment asked for. A "malformed_call" ended at `</search>` but cannot
    be run (the engine tells the model and goes on); "malformed" ends the trajectory."""

    kind: SegmentKind
    text: str = ""  # the query for "search", the answer for "answer", the problem otherwise


_WHITESPACE = re.compile(r"\s+")


def segment_stopped(text: str, tail: str, stops: tuple[str, ...]) -> bool:
    """Whether a segment whose last tokens read `tail` has reached one of `stops`
    (a newline counts only after the answer's first words)."""
    return any(s in tail and (s != "\n" or "\n" in text.lstrip()) for s in stops)


def closing_tag(text: str) -> str:
    """The tag that closes the `<search>` or `<answer>` a segment opened last and left open
    ("" when none is): what the engine writes for a turn it cut."""
    search, answer = text.rfind(SEARCH_OPEN), text.rfind(ANSWER_OPEN)
    if search > answer and SEARCH_CLOSE not in text[search:]:
        return SEARCH_CLOSE
    if answer > search and ANSWER_CLOSE not in text[answer:]:
        return ANSWER_CLOSE
    return ""


# A search query that opens with "[" opens a scope: the documents (and pages) it searches.
SCOPE_OPEN = re.compile(r"\s*\[")


def open_scope(segment: str) -> tuple[str, bool] | None:
    """The scope of the last search `segment` opens, as written so far, and whether its "]"
    is written; None when that search opens no scope."""
    start = segment.rfind(SEARCH_OPEN)
    if start < 0:
        return None
    query = segment[start + len(SEARCH_OPEN) :]
    opened = SCOPE_OPEN.match(query)
    if not opened:
        return None
    scope, closed, _ = query[opened.end() :].partition("]")
    return scope, bool(closed)


def searched_query(query: str, question: str) -> str:
    """The query a search runs: a scope alone (`[3M 2018]`, nothing after the brackets)
    searches the question itself within it (protocol 6), empty brackets (`[]`) the question
    itself everywhere. A small model copying a long
    question into its first search drifts from it ("Answer in USD millions. Answer in…",
    a rewording); the scope is what it has to choose, the question is already written."""
    scope, rest = split_scope(query)
    if scope and not rest.strip():
        return f"{query.strip()} {question.strip()}"
    # No scope and nothing after it: the question, everywhere. A tokenizer may decode the
    # brackets with a space between them ("[ ]"), which still names no document.
    if re.fullmatch(r"\[\s*\]", query.strip()):
        return question.strip()
    return query


def written_query(query: str, question: str) -> str:
    """What the model writes for `query` (the inverse of `searched_query`): the scope alone
    when the query is the scope and the question."""
    scope, rest = split_scope(query)
    if scope and rest.strip() == question.strip():
        return query[: len(query) - len(rest)].strip()
    return query


def normalize_query(text: str) -> str:
    """Collapse whitespace and case and drop a leading `[scope]`, so query echo is detected
    regardless of spacing or of the documents it was limited to."""
    return _WHITESPACE.sub(" ", split_scope(text)[1]).strip().lower()


def parse_segment(text: str, *, ended_by_eos: bool, answer_opened: bool = False) -> Segment:
    """Read one model segment.

    `answer_opened` says the harness already wrote `<answer>` for the model (the echo
    policy does), so the end of its first line or of the sequence closes the answer.
    """
    if answer_opened:
        body = text.split(ANSWER_CLOSE, 1)[0].lstrip()
        if ANSWER_CLOSE in text or ended_by_eos or "\n" in body:
            return Segment("answer", body.split("\n", 1)[0].strip())
        return Segment("unfinished")
    answer_end = text.find(ANSWER_CLOSE)
    search_end = text.find(SEARCH_CLOSE)
    if answer_end >= 0 and (search_end < 0 or answer_end < search_end):
        head = text[:answer_end]
        start = head.rfind(ANSWER_OPEN)
        if start < 0:
            return Segment("malformed", f"{ANSWER_CLOSE} without {ANSWER_OPEN}")
        return Segment("answer", head[start + len(ANSWER_OPEN) :].strip())
    if search_end >= 0:
        head = text[:search_end]
        start = head.rfind(SEARCH_OPEN)
        if start < 0:
            return Segment("malformed_call", f"{SEARCH_CLOSE} without {SEARCH_OPEN}")
        query = head[start + len(SEARCH_OPEN) :].strip()
        if not query:
            return Segment("malformed_call", "empty search query")
        if ANSWER_OPEN in query:
            return Segment("malformed_call", f"{ANSWER_OPEN} inside a search query")
        return Segment("search", query)
    if not ended_by_eos:
        return Segment("unfinished")
    if SEARCH_OPEN in text:
        return Segment("malformed", f"{SEARCH_OPEN} never closed")
    if ANSWER_OPEN in text:
        return Segment("malformed", f"{ANSWER_OPEN} never closed")
    return Segment("no_answer", "ended without an answer")
