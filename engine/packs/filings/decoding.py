"""The filings pack's rules of greedy decoding: what holds of annual reports only.

Each is a `Limits` switch that only the pack turns on (`engine.packs.filings` says why each
exists and what it was measured to do; the runs are told in docs/packs.md). The engine's own
rules, written for any documents, are `engine.agent.greedy_rules`, which asks these too:

- A scope's year (`latest_year_scope`): the latest the question names, as the teacher writes
  it: a filing reports its year beside earlier ones.
- Yes or No first (`yes_no_answers`) to a question whose asking clause (`asking_clause`)
  opens with an auxiliary verb and offers no "or".
- The form asked (`answer_form`): one of two options offered ("increase or decrease"), no Yes
  or No to a question opening with a question word, words, not a figure, to "what drove" or
  "why".
- The statement named (`statement_filter`): after the first search, every search's scope
  filters its pages with words of the financial statement the question names.

The publisher writes this module beside the bundled run_agent.py as it writes the engine's
rules (`publishing.bundle`): only names from the engine, no torch or index.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from engine.agent.protocol import ANSWER_OPEN, SCOPE_OPEN, SEARCH_OPEN, open_scope
from engine.packs.filings.questions import asks_cause
from engine.search.index import YEAR

if TYPE_CHECKING:
    from engine.agent.trajectory import Limits

# The `Limits` switches of the rules below.
FILINGS_RULES = ("latest_year_scope", "yes_no_answers", "statement_filter", "answer_form")


# Digits on their way to a year, or one: "201", "2018", "20180" (not "2" of "Q2", nor "10").
_YEARLIKE = re.compile(r"(?<!\d)(?:19|20)\d+")


@functools.lru_cache(maxsize=256)
def latest_year(question: str) -> str | None:
    """The latest year the question names ("2020" of "FY2018 - FY2020"), or None."""
    return max(YEAR.findall(question), default=None)


def _year_not_latest(scope: str, closed: bool, question: str) -> bool:
    """Whether a scope writes a year, or three digits or more on their way to one, other than
    the latest year the question names: the digits run on from no start of it ("201" for
    2020), or end short of it ("[Walmart 201 - 2020]": a rule of whole years only is
    walked around so)."""
    latest = latest_year(question)
    if not latest:
        return False
    for run in _YEARLIKE.finditer(scope):
        digits = run.group()
        ended = closed or run.end() < len(scope)
        if len(digits) > 2 and not (digits == latest if ended else latest.startswith(digits)):
            return True
    return False


def scope_year_not_latest(segment: str, question: str) -> bool:
    """Whether the search `segment` (a turn's text so far) opens a scope that writes a year
    other than the latest the question names (`_year_not_latest`; the filings pack's rule)."""
    opened = open_scope(segment)
    return opened is not None and _year_not_latest(*opened, question)


# The words that open the clause a question asks with: an auxiliary verb asks yes or no ("Is
# 3M…", "Looking at VaR, did…"), a question word asks what ("In 2022 Q2, which…", "As of
# FY2023Q1, by how many…"). Which, who, where and when also open relative clauses.
_AUXILIARY = re.compile(
    r"(?:is|are|was|were|do|does|did|has|have|had|can|could|will|would|should)\b", re.I
)
_PREPOSITION = r"(?:(?:by|in|of|for|to|from|at|on)\s+)?"  # "by how many…", "in which…"
_QUESTION_WORD = re.compile(
    _PREPOSITION + r"(?:what|which|why|who|whom|whose|how|where|when)\b", re.I
)
_RELATIVE = re.compile(_PREPOSITION + r"(?:which|who|whom|whose|where|when)\b", re.I)
_CLAUSE_BREAK = re.compile(r"[,:;]|\.\s")
_OFFERS_CHOICE = re.compile(r"\bor\b", re.I)  # "increase or decrease": no yes or no


def _first_sentence(question: str) -> str:
    return question.strip().split("?")[0]


@functools.lru_cache(maxsize=256)
def asking_clause(question: str) -> str:
    """The clause of the question's first sentence that asks: the first to open with an
    auxiliary verb or a question word, after any opening phrases ("Among operations,
    investing, and financing activities, which…", "Assume you are an analyst. Answer from
    the balance sheet: what is…"); "" where none does. A clause opening with a relative word
    gives way to a later one opening with an auxiliary verb ("For 3M, which sells tape, did
    revenue grow?")."""
    clauses = [c.strip() for c in _CLAUSE_BREAK.split(_first_sentence(question))]
    asking = [c for c in clauses if _AUXILIARY.match(c) or _QUESTION_WORD.match(c)]
    auxiliary = [c for c in asking if _AUXILIARY.match(c)]
    if asking and _RELATIVE.match(asking[0]) and auxiliary:
        return auxiliary[0]
    return asking[0] if asking else ""


@functools.lru_cache(maxsize=256)
def asks_yes_no(question: str) -> bool:
    """Whether the question's first sentence asks yes or no: its asking clause opens with an
    auxiliary verb, and it offers no choice ("… or …")."""
    return bool(_AUXILIARY.match(asking_clause(question))) and not _OFFERS_CHOICE.search(
        _first_sentence(question)
    )


# A question that would ask yes or no but offers two words to choose from ("Did wages increase
# or decrease…?", "Has the quick ratio improved or declined…?").
_OFFERED = re.compile(r"\b([a-z]+)\s+or\s+([a-z]+)\b", re.I)


@functools.lru_cache(maxsize=256)
def offered_options(question: str) -> tuple[str, str] | None:
    """The two words a question asks to choose between, lowercased ("increase", "decrease"),
    where its asking clause opens as a yes-or-no question does and it offers "A or B"."""
    if not _AUXILIARY.match(asking_clause(question)):
        return None
    offered = _OFFERED.search(_first_sentence(question))
    return (offered[1].lower(), offered[2].lower()) if offered else None


@functools.lru_cache(maxsize=256)
def asks_what(question: str) -> bool:
    """Whether the question's asking clause opens with a question word (what, which, how…)."""
    return bool(_QUESTION_WORD.match(asking_clause(question)))


# The endings of a verb's forms after the start they share ("increas": "increase",
# "increases", "increased", "increasing").
_ENDINGS = ("e", "es", "ed", "ing")


def _forms(option: str) -> frozenset[str]:
    """The words that say an option: the option with or without an "s", or the start every
    form of it shares ("increas" of "increase", "improv" of "improved") with an ending.
    A student let begin "Incr" writes "IncrEarnings"; let begin "Increas", "IncrEaSpn"."""
    stem = re.sub(r"(?:ing|ed|es|e|d|s)$", "", option)
    stem = stem if len(stem) >= 3 else option
    return frozenset({option, option + "s", *(stem + ending for ending in _ENDINGS)})


# What a figure opens with: a digit, a sign, a currency, a bracket of a negative.
_FIGURE_OPENERS = "-+$€£¥(.,%"


def _opens_figure(written: str) -> bool:
    return written[0].isdigit() or written[0] in _FIGURE_OPENERS


def answer_off_form(segment: str, question: str) -> bool:
    """Whether the answer the `segment` writes is not of the form the question asks (the
    filings pack's rule): for a question asking what drove a change, or why
    (`questions.asks_cause`), it opens as a figure does (a digit, a sign); for a choice
    (`offered_options`), its first word is no form of either option (`_forms`); for a
    question opening with a question word (`asks_what`), it is "Yes" or "No"."""
    start = segment.find(ANSWER_OPEN)
    if start < 0:
        return False
    written = segment[start + len(ANSWER_OPEN) :].lstrip()
    if written[:1] and _opens_figure(written) and asks_cause(question):
        return True
    first = re.match(r"[^\W\d_]*", written).group().lower()
    options = offered_options(question)
    if options and written:
        forms = _forms(options[0]) | _forms(options[1])
        if len(first) < len(written):  # the first word is whole, unless digits go on with it
            return first not in forms or written[len(first)].isdigit()
        return not any(form.startswith(first) for form in forms)
    if not asks_what(question):
        return False
    # "Yes" or "No" as the word so far: "North" and "Yesterday" are written by other tokens.
    return first in ("yes", "no")


def answer_not_yes_no(segment: str) -> bool:
    """Whether the answer the `segment` writes begins with a word that is not "Yes" or "No"
    (case aside), or with letters that cannot become one."""
    start = segment.rfind(ANSWER_OPEN)
    if start < 0:
        return False
    written = segment[start + len(ANSWER_OPEN) :].lstrip()
    first = re.match(r"[^\W\d_]*", written).group().lower()
    if len(first) < len(written):  # the first word is whole (or the answer opens otherwise)
        return first not in ("yes", "no")
    return not ("yes".startswith(first) or "no".startswith(first))


# A financial statement as questions name it: US GAAP's and IFRS's names, singular or plural.
_STATEMENT_NAMED = re.compile(
    r"\b(?:balance sheets?|statements? of financial (?:position|condition)|income statements?"
    r"|statements? of (?:income|operations|earnings|cash flows?)|profit (?:and|&) loss"
    r"|p&l|cash flows? statements?)",
    re.I,
)


# Words of a statement's name that name no one statement: a filter needs another.
_STATEMENT_LINKS = frozenset({"statement", "statements", "of", "and", "&"})


@functools.lru_cache(maxsize=256)
def statement_words(question: str) -> frozenset[str]:
    """The words of the financial statements the question names, lowercased ("cash", "flow",
    "statement"); empty where it names none."""
    return frozenset(
        w for named in _STATEMENT_NAMED.findall(question) for w in named.lower().split()
    )


def statement_left(segment: str, question: str) -> bool:
    """Whether the search `segment` (a turn's text so far, after a first search) scopes its
    pages with anything but words of the statements the question names (see the module's
    note): its scope ends with no "|", or writes after it a word that is none of their
    names', or only words that name no one statement ("statement"). A word still being
    written only has to begin one."""
    named = statement_words(question)
    start = segment.rfind(SEARCH_OPEN)
    if not named or start < 0:
        return False
    opened = SCOPE_OPEN.match(segment[start + len(SEARCH_OPEN) :])
    if not opened:
        return False
    scope, closed, _ = segment[start + len(SEARCH_OPEN) + opened.end() :].partition("]")
    _, piped, heading = scope.partition("|")
    if not piped:
        return bool(closed)
    words = heading.lower().split()
    # a name word, or one without its plural's "s" ("cash flow" of "statement of cash flows")
    whole = {*named, *(word[:-1] for word in named if word.endswith("s"))}
    if closed:
        return not set(words) - _STATEMENT_LINKS or not set(words) <= whole
    if heading[-1:].isspace():
        return not set(words) <= whole
    *written, last = words or [""]
    return not (set(written) <= whole and any(word.startswith(last) for word in named))


def breaks_filings_rule(segment: str, question: str, limits: Limits, searched: int = 0) -> bool:
    """Whether a turn's text so far breaks a rule of the pack that `limits` turns on
    (`searched`: the searches run before this turn)."""
    return (
        (limits.latest_year_scope and scope_year_not_latest(segment, question))
        or (limits.yes_no_answers and asks_yes_no(question) and answer_not_yes_no(segment))
        or (limits.statement_filter and searched > 0 and statement_left(segment, question))
        or (limits.answer_form and answer_off_form(segment, question))
    )
