"""Rules of greedy decoding: the likeliest token that breaks none of them is written.

A small model decoding greedily fails in ways a rule can see from the text alone (and, for
a scope, the index). Each rule is a `Limits` switch. These are written for any documents;
they earned their place on filings, where the filings pack turns them on, and cost recall on
another domain, where the default path leaves them off (docs/packs.md#rules-off):

- Word loops (`loop_guard`): a turn may not end with the same run of 1-4 words written three
  times in a row, nor with a word of no letters longer than any figure, nor with the same few
  characters over and over ("1.1.1.1."): greedy decoding repeats itself until the turn's token
  limit cuts it. Words, not tokens: a figure's digits ("1,000,000") repeat tokens and are one
  word.
- Scopes it did not copy (`grounded_scope`): a search's `[names | heading]` names the
  documents and pages to search, and the student is taught to copy them from the question;
  on entities it never saw it writes a training entity's name instead. Under the rule every
  word of a scope is a piece of one of the question's words (the word, its start or end, or a
  run of its letters or digits: "Cola" of "Coca-Cola"); a piece of one letter must be a
  whole word. Where the question names an entity of the index (`companies`, as the search
  tool reads a scope), the scope's names begin with one of them: a question word that names
  no document searches them all.
- Search terms it did not copy (`grounded_terms`): after the scope, the words searched for
  are the question's own, each once, and signs between them the question's: the lines a hit
  shows are those holding the query's words, so a query of the results' words shows the
  results again. A word is a run of letters and digits of any script.
- An answer's own closing tag (`answer_tag`): an answer writes no tag but `</answer>`; one
  closed by `</search>` is lost.

The rules that hold of annual reports only are the filings pack's, in its own module
(`engine.packs.filings.decoding`: a scope's latest year, Yes or No first, the form asked,
the statement named); `broken` asks them too, so that every engine decodes by one call.

Sampling (temperature > 0) is never ruled: the trainer recomputes the log-probs of the
tokens it sampled under the model's own distribution, and these are greedy's failures.
The runs behind each rule are told in docs/packs.md. The bundled run_agent.py decodes with
this module itself, written beside it by the publisher (`publishing.bundle`).
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

# Only names from the engine, no torch or index: the publisher writes this module beside the
# bundled run_agent.py with these definitions copied in (publishing.bundle).
from engine.agent.protocol import (
    ANSWER_CLOSE,
    ANSWER_OPEN,
    SCOPE_OPEN,
    SEARCH_CLOSE,
    SEARCH_OPEN,
    open_scope,
)
from engine.packs.filings.decoding import FILINGS_RULES, breaks_filings_rule
from engine.search.index import naming_text

if TYPE_CHECKING:
    from engine.agent.trajectory import Limits

MAX_RUN_WORDS = 4  # the longest run of words a loop repeats
REPEATS = 3  # a run written this many times in a row is a loop
# The likeliest tokens a step tries first, in order: a student sure of a wrong scope may rank
# no token going on to the right name among its 64 likeliest. A step tries them only while the
# likelier ones break a rule, and stops at the first that keeps to them; where none does, it
# goes on down the whole vocabulary (`ranked_tokens`): a word of the question may go on with a
# token the model ranks past 15,000th. A turn that no token can keep to the rules is left to
# the model.
CANDIDATES = 4096


def ranked_tokens(logits) -> Iterator[int]:
    """A row of `logits`' tokens, likeliest first: the `CANDIDATES` likeliest, then the rest
    (ranked only when asked for)."""
    top = logits.topk(min(CANDIDATES, logits.shape[-1])).indices.tolist()
    yield from top
    if len(top) < logits.shape[-1]:
        yield from logits.argsort(descending=True)[len(top) :].tolist()


_ALNUM_RUN = re.compile(r"[a-z0-9]+")
_TERM_WORD = re.compile(r"[^\W_]+")  # letters and digits of any script ("päää", "сал")
_LETTERS_OR_DIGITS = re.compile(r"[a-z]+|[0-9]+")
_PUNCTUATION = "\"'“”‘’()[]{},.;:?!"


# No figure is this long ("$1,234,567,890,123" is 18 characters): a word of digits and signs
# alone that runs on is a loop ("-1111111222222211222…", "1.1.2.2.1.1.2.2…", written to the
# turn's token limit).
MAX_FIGURE_CHARACTERS = 20
# Nor does a figure repeat the same 1-8 characters three times over 8 characters or more,
# zeros and separators aside ("1,000,000,000"): "1.1.1.1." is a loop thirteen characters
# before it runs too long, and a student let write it on wrote "1.1.1.1.1.1.1.1.1.1. 2.1.1.…".
_CHARACTER_LOOP = re.compile(r"(\S{1,8}?)\1{2,}$")
MIN_CHARACTER_LOOP = 8
# Nor has a figure more digits than this ("$1,234,567,890,123" has 13): "-1111111222222211111"
# is nineteen digits in twenty characters, and passes both rules above.
MAX_FIGURE_DIGITS = 15


def ends_in_loop(text: str) -> bool:
    """Whether `text` ends with one run of 1-4 words written three times in a row
    ("amount amount amount", "amount] usd amount] usd amount] usd"), or with a word of no
    letters longer than any figure, in characters or in digits ("-111111122222221122222", a
    tag before it aside), or with the same few characters over and over ("1.1.1.1.",
    `_CHARACTER_LOOP`)."""
    words = text.split()
    if words and not text[-1].isspace():
        last = words[-1].rsplit(">", 1)[-1]
        if not any(c.isalpha() for c in last) and (
            len(last) > MAX_FIGURE_CHARACTERS or sum(c.isdigit() for c in last) > MAX_FIGURE_DIGITS
        ):
            return True
        looped = _CHARACTER_LOOP.search(last)
        if looped and len(looped[0]) >= MIN_CHARACTER_LOOP and looped[0].strip("0,."):
            return True
    for n in range(1, MAX_RUN_WORDS + 1):
        tail = words[-n * REPEATS :]
        if len(tail) < n * REPEATS:
            break
        if all(word == tail[i % n] for i, word in enumerate(tail)):
            return True
    return False


def scope_uncopied(segment: str, question: str, companies: frozenset[str] = frozenset()) -> bool:
    """Whether the search `segment` (a turn's text so far) opens a scope with a word that is
    no piece of the question's words (case aside; see the module's note): a word written
    whole is a question word or its start or end, one still being written is inside one.
    With `companies` (the question's pieces that name a company), also whether its names
    begin with no start of one of them."""
    opened = open_scope(segment)
    if opened is None:
        return False
    scope, closed = opened
    if companies and _names_no_company(scope, closed, companies):
        return True
    words = scope.replace("|", " ").lower().split()
    if not words:
        return False
    pieces = question_pieces(question)
    *written, last = words
    if closed or scope[-1] in "| \t\n":
        written.append(last)
    elif not any(last in piece for piece in pieces):  # a word still being written
        return True
    return not all(_piece_of(word, pieces) for word in written)


def terms_uncopied(segment: str, question: str) -> bool:
    """Whether the search `segment` (a turn's text so far) writes, after its scope (the whole
    query where it opens none), a word that is none of the question's (a run of letters and
    digits, any script's, case aside) or one it wrote before, or a sign the question has not
    (see the module's note). A word still being written only has to begin one of the
    question's it has not written."""
    start = segment.rfind(SEARCH_OPEN)
    if start < 0:
        return False
    query = segment[start + len(SEARCH_OPEN) :]
    if SCOPE_OPEN.match(query):
        _, closed, query = query.partition("]")
        if not closed:
            return False
    terms, closing, tag = query.partition("<")
    tag, terms = closing + tag, terms.lower()
    if tag and not (tag.startswith(SEARCH_CLOSE) or SEARCH_CLOSE.startswith(tag)):
        return True  # a tag but its own closing: "risk\n<search>"
    if any(not c.isspace() and c not in question for c in _TERM_WORD.sub(" ", terms)):
        return True  # a sign the question has not: "|", ">" ("risk-to-vAr>-2023 |")
    words = _TERM_WORD.findall(terms)
    if not words:
        return False
    asked = frozenset(_TERM_WORD.findall(question.lower()))
    *written, last = words
    if tag or not terms[-1].isalnum():
        written.append(last)
    elif not any(word.startswith(last) for word in asked - set(written)):
        return True  # a word still being written that can become no new one of the question's
    return not set(written) <= asked or len(set(written)) < len(written)


@functools.lru_cache(maxsize=256)  # asked once per candidate token, up to CANDIDATES a step
def question_pieces(question: str) -> frozenset[str]:
    """The question's words, lowercased, without the punctuation around them ("pepsico's",
    "fy2023q1"), the runs of letters and digits inside them ("coca", "cola", "s") and the
    runs of letters alone or digits alone ("fy", "2023", "q", "1")."""
    lowered = question.lower()
    words = {word.strip(_PUNCTUATION) for word in lowered.split()}
    runs = _ALNUM_RUN.findall(lowered) + _LETTERS_OR_DIGITS.findall(lowered)
    return frozenset({word for word in words if word} | set(runs))


def _names_no_company(scope: str, closed: bool, companies: frozenset[str]) -> bool:
    """Whether a scope's names (before any "|") begin with no start of a company the
    question names: once its first word is written, or the names end without one."""
    names, piped, _ = scope.partition("|")
    words = names.lower().split()
    if not words:
        return bool(piped) or closed
    first = words[0].strip(_PUNCTUATION)
    if len(words) > 1 or piped or closed or names[-1].isspace():  # the first word is whole
        # "Pepsi" or "PepsiCo's" for "pepsico"; one letter is no name
        return len(first) < 2 or not any(
            company.startswith(first) or first.startswith(company) for company in companies
        )
    return not any(company.startswith(first) for company in companies)


def companies_named(question: str, names_company) -> frozenset[str]:
    """The pieces (`question_pieces`) of the question's words written as a name that name a
    company (`naming_text`: "Block", not "to the best of your abilities"):
    `names_company(word)` says whether a word names one (`SearchIndex.names_company`).
    Letters needed: a year or a figure names no company."""
    return frozenset(
        piece
        for piece in question_pieces(naming_text(question, names_company))
        if len(piece) > 1 and not piece.isdigit() and names_company(piece)
    )


def _piece_of(word: str, pieces: frozenset[str]) -> bool:
    """A written scope word is a question word, or the start or end of one (two letters on)."""
    return word in pieces or (
        len(word) > 1 and any(piece.startswith(word) or piece.endswith(word) for piece in pieces)
    )


def _closes_answer(tag: str) -> bool:
    """Whether a tag written inside an answer is (on its way to) the answer's own closing:
    "IncrEasing expenses</search>" loses the answer."""
    return tag.startswith(ANSWER_CLOSE) or ANSWER_CLOSE.startswith(tag)


def answer_tag_off(segment: str) -> bool:
    """Whether the answer the `segment` writes writes a tag other than its own closing
    `</answer>` (the first answer: "<answer><answer>" is off)."""
    start = segment.find(ANSWER_OPEN)
    if start < 0:
        return False
    written = segment[start + len(ANSWER_OPEN) :]
    tag = written.find("<")
    return tag >= 0 and not _closes_answer(written[tag:])


# The `Limits` switches of the rules above, then the filings pack's.
RULES = ("loop_guard", "grounded_scope", "grounded_terms", "answer_tag", *FILINGS_RULES)


# The `Limits` switches of the figure rules (`agent.grounding`, and the filings pack's
# `packs.filings.rows`): masks over an answer's figures, applied by the same engines as the
# rules above, at any temperature.
FIGURE_RULES = ("grounded_figures", "row_figures")


def rules_on(limits: Limits) -> bool:
    """Whether any rule of greedy decoding is on."""
    return any(getattr(limits, rule) for rule in RULES)


def masks_tokens(limits: Limits) -> bool:
    """Whether decoding masks tokens: a rule of greedy decoding or a figure rule is on."""
    return rules_on(limits) or any(getattr(limits, rule) for rule in FIGURE_RULES)


def unruled(limits: Limits) -> Limits:
    """`limits` with every rule of decoding off, greedy and figure rules alike (the trainer's
    rollouts: the log-probs it recomputes are the model's own)."""
    return dataclasses.replace(limits, **dict.fromkeys(RULES + FIGURE_RULES, False))


def broken(
    segment: str,
    question: str,
    limits: Limits,
    companies: frozenset[str] = frozenset(),
    searched: int = 0,
) -> bool:
    """Whether a turn's text so far breaks a rule that `limits` turns on (`companies`: those
    the question names, `companies_named`; `searched`: the searches run before this turn)."""
    return (
        (limits.loop_guard and ends_in_loop(segment))
        or (limits.grounded_scope and scope_uncopied(segment, question, companies))
        or (limits.grounded_terms and terms_uncopied(segment, question))
        or (limits.answer_tag and answer_tag_off(segment))
        or breaks_filings_rule(segment, question, limits, searched)
    )
