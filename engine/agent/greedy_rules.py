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

These hold of annual reports only and are the filings pack's (`engine.packs.filings`,
where each says why and what it was measured to do):

- A scope's year (`latest_year_scope`): the latest the question names, as the teacher writes
  it: a filing reports its year beside earlier ones.
- Yes or No first (`yes_no_answers`) to a question whose asking clause (`asking_clause`)
  opens with an auxiliary verb and offers no "or".
- The form asked (`answer_form`): one of two options offered ("increase or decrease"), no Yes
  or No to a question opening with a question word, words, not a figure, to "what drove" or
  "why".
- The statement named (`statement_filter`): after the first search, every search's scope
  filters its pages with words of the financial statement the question names.

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
from engine.agent.protocol import ANSWER_CLOSE, ANSWER_OPEN, SEARCH_CLOSE, SEARCH_OPEN
from engine.documents.synthesis import asks_cause
from engine.search.index import YEAR, naming_text

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


_SCOPE_OPEN = re.compile(r"\s*\[")
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
    opened = _open_scope(segment)
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
    if _SCOPE_OPEN.match(query):
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
    opened = _open_scope(segment)
    return opened is not None and _year_not_latest(*opened, question)


def _open_scope(segment: str) -> tuple[str, bool] | None:
    """The scope of the last search `segment` opens, as written so far, and whether its "]"
    is written; None when that search opens no scope."""
    start = segment.rfind(SEARCH_OPEN)
    if start < 0:
        return None
    query = segment[start + len(SEARCH_OPEN) :]
    opened = _SCOPE_OPEN.match(query)
    if not opened:
        return None
    scope, closed, _ = query[opened.end() :].partition("]")
    return scope, bool(closed)


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


def _closes_answer(tag: str) -> bool:
    """Whether a tag written inside an answer is (on its way to) the answer's own closing:
    "IncrEasing expenses</search>" loses the answer."""
    return tag.startswith(ANSWER_CLOSE) or ANSWER_CLOSE.startswith(tag)


# What a figure opens with: a digit, a sign, a currency, a bracket of a negative.
_FIGURE_OPENERS = "-+$€£¥(.,%"


def _opens_figure(written: str) -> bool:
    return written[0].isdigit() or written[0] in _FIGURE_OPENERS


def answer_tag_off(segment: str) -> bool:
    """Whether the answer the `segment` writes writes a tag other than its own closing
    `</answer>` (the first answer: "<answer><answer>" is off)."""
    start = segment.find(ANSWER_OPEN)
    if start < 0:
        return False
    written = segment[start + len(ANSWER_OPEN) :]
    tag = written.find("<")
    return tag >= 0 and not _closes_answer(written[tag:])


def answer_off_form(segment: str, question: str) -> bool:
    """Whether the answer the `segment` writes is not of the form the question asks (the
    filings pack's rule): for a question asking what drove a change, or why
    (`synthesis.asks_cause`), it opens as a figure does (a digit, a sign); for a choice
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
    opened = _SCOPE_OPEN.match(segment[start + len(SEARCH_OPEN) :])
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


# The `Limits` switches of the rules above: those of any documents, then the filings pack's.
RULES = (
    "loop_guard",
    "grounded_scope",
    "grounded_terms",
    "answer_tag",
    "latest_year_scope",
    "yes_no_answers",
    "statement_filter",
    "answer_form",
)


# The `Limits` switches of the figure rules (`agent.grounding`): masks over an answer's figures,
# applied by the same engines as the rules above, at any temperature.
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
        or (limits.latest_year_scope and scope_year_not_latest(segment, question))
        or (limits.yes_no_answers and asks_yes_no(question) and answer_not_yes_no(segment))
        or (limits.statement_filter and searched > 0 and statement_left(segment, question))
        or (limits.answer_form and answer_off_form(segment, question))
    )
