"""Rules of greedy decoding: the likeliest token that breaks none of them is written.

A small model decoding greedily fails in ways a rule can see from the text alone (and, for
a scope, the index):

- Word loops (`Limits.loop_guard`): one word, or a few, written over and over until the
  turn's token limit cuts it: "[3M 2018 | cash flow] amount amount amount …" (proof50-54's
  validation queries). A turn may not end with the same run of 1-4 words written three times
  in a row. Words, not tokens: a figure's digits ("1,000,000") repeat tokens and are one word.
  Nor may a word of no letters run longer than any figure (20 characters, 15 digits), nor a
  word repeat the same 1-8 characters three times over 8 or more, zeros and separators aside:
  students wrote answers of "1111…", "1.1.1.1…" or "-1111111222222211…" to the turn's limit
  (proof87, proof90, proof92, proof93), and "-1111111222222211111" (proof97).
- Scopes it did not copy (`Limits.grounded_scope`): a search's `[names | heading]` names the
  documents and pages to search, and the student is taught to copy them from the question;
  on companies it never saw, it wrote a training company's name instead ("[Pfizer 2021]" for
  every PepsiCo question in proof54; "[3M_2018_10K]", a document id it read in its results).
  Under the rule every word of a scope is a piece of one of the question's words: the word,
  or its start or end, or a run of its letters or digits ("Pepsico" of "Pepsico's", "Cola"
  of "Coca-Cola", "2023" of "FY2023Q1"), so the search can only narrow to what the question
  names. A piece of one letter must be a whole word: proof56's student scoped to
  "[PepsiCo 2022 | e]", an "e" inside some word. A word still being written only has to be
  inside one of the question's words.
  Where the question names a company of the index (`companies`: its pieces that name one, as
  the search tool reads a scope), the scope's names must begin with one of them: copying a
  question word that is no company ("[FY2022]" for "… for PepsiCo?" in proof58, "[M&A 2022]",
  "[VaR 2023]" in proof59) searches every filing of that year or all of them.
  A year in a scope is the latest the question names, as the teacher writes it: a filing
  reports its year beside earlier ones, so "FY2018 - FY2020" is read in the 2020 filing.
  Students copy the first ("[Walmart 2018]" for Walmart's FY2018 - FY2020 EBITDA margin in
  proof96, proof97 and proof100, which searched the 2018 filing only).

- Search terms it did not copy (`Limits.grounded_terms`): after a search's scope, the words
  it searches for are the question's own words, each once, as the teacher writes its key
  terms. Students wrote words of their earlier results or none of the question's ("[3M 2018 |
  cash flow] amount other than capital expenditures related to environmental projects",
  "amount principal" for PepsiCo's capex, proof99) and the same words over and over ("major
  acquisitions major acquisitions major purchases…", proof102): the lines a hit shows are
  those holding the query's words, so a query of the results' words shows the results again.
  A word is a run of letters and digits of any script ("company" and "s" of "company's"; proof104's
  student, held to the question's letters, went on in others: "päääøäç…"), one still being
  written only has to begin one of the question's, and a sign between words is one the
  question has ("-" of "risk-to", not "|").
- Answers that are no answer (`Limits.yes_no_answers`): a question that asks yes or no (the
  clause of its first sentence that asks, the first after any opening phrases to open with
  an auxiliary verb or a question word, begins "Is", "Does", "Has", "Was", …, and the
  sentence offers no "or"; `asking_clause`) is answered "Yes" or "No" first. proof63's
  student answered "3M" to "Is 3M a capital-intensive business based on FY2022 data?", where
  proof62's answered "No"; 17 of financebench-dev's 18 such questions are answered yes or no,
  and the 18th ("Does AMEX have an improving operating margin profile…? If operating margin
  is not a useful metric…") in words a yes or no does not lose to a figure.
- Answers of another form than asked (`Limits.answer_form`): an answer writes no tag but its
  own `</answer>` (proof87's closed one with `</search>`, and lost it); a question that would
  ask yes or no but offers two words to choose from ("Did wages … increase or decrease in
  FY2023?", "Has the quick ratio improved or declined…?") is answered with one of them first (a
  form of it: "Increased", "declining", not "IncrEaSpn"); one that opens with a question
  word ("What is the year end FY2019 total amount of inventories…?", "In 2022 Q2, which…",
  "Among operations, investing, and financing activities, which…") never with "Yes" or "No";
  one asking what drove a change, or why, in words: never opening with a figure or a sign.
  proof86-88's students, taught many yes-or-no answers, answered "Yes" to both; proof97's
  answered every "What drove…" and "why did…" question with a figure ("-11 million").
- A statement the question names, left (`Limits.statement_filter`): a question that names a
  financial statement ("… shown in the cash flow statement", "Using the balance sheet, …") is
  searched within it after the first search, as the teacher searches: every later search's
  scope filters its pages ("[3M 2018 | cash flow] …") with words of the name as the question
  writes it. Students copy it mostly, not always: proof72's wrote "| p7", "| pepsi" and
  "| p&l" for three such questions, and missed evidence the statement holds. The weights of
  proof66-72, evaluated with and without the rule: recall 0.534 -> 0.540 on average, the
  lowest run 0.460 -> 0.493, the highest 0.613 -> 0.593; found within the statement named,
  capex, EBITDA, balance-sheet and DPO questions of five companies; lost, in 5 of the 7 runs,
  a question asking for "restructuring costs directly outlined in the income statements",
  whose evidence is in a note.

Sampling (temperature > 0) is never ruled: the trainer recomputes the log-probs of the
tokens it sampled under the model's own distribution, and these are greedy's failures.
"""

import dataclasses
import functools
import re
from collections.abc import Iterator

from workers.agent.protocol import ANSWER_CLOSE, ANSWER_OPEN, SEARCH_CLOSE, SEARCH_OPEN
from workers.agent.trajectory import Limits
from workers.documents.synthesis import asks_cause
from workers.search.index import YEAR, naming_text

MAX_RUN_WORDS = 4  # the longest run of words a loop repeats
REPEATS = 3  # a run written this many times in a row is a loop
# The likeliest tokens a step tries first, in order: a student sure of a wrong scope ("[A.P.
# 2021]" for American Express, proof78) ranked no token going on to the company among its 64
# likeliest. A step tries them only while the likelier ones break a rule, and stops at the first
# that keeps to them; where none does, it goes on down the whole vocabulary (`ranked_tokens`):
# proof104's student, held to the question's words, ranked the "t" finishing "percen" (of
# "percent") 15,290th. A turn that no token can keep to the rules is left to the model.
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
# alone that runs on is a loop ("-1111111222222211222…", "1.1.2.2.1.1.2.2…": proof87's,
# proof90's, proof92's and proof93's students wrote such answers to the turn's 64-token limit).
MAX_FIGURE_CHARACTERS = 20
# Nor does a figure repeat the same 1-8 characters three times over 8 characters or more,
# zeros and separators aside ("1,000,000,000"): "1.1.1.1." is a loop thirteen characters
# before it runs too long, and a student let write it on wrote "1.1.1.1.1.1.1.1.1.1. 2.1.1.…".
_CHARACTER_LOOP = re.compile(r"(\S{1,8}?)\1{2,}$")
MIN_CHARACTER_LOOP = 8
# Nor has a figure more digits than this ("$1,234,567,890,123" has 13): proof97's student
# answered "-1111111222222211111", nineteen digits in twenty characters, under both rules above.
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
    start = segment.rfind(SEARCH_OPEN)
    if start < 0:
        return False
    query = segment[start + len(SEARCH_OPEN) :]
    opened = _SCOPE_OPEN.match(query)
    if not opened:
        return False
    scope, closed, _ = query[opened.end() :].partition("]")
    if companies and _names_no_company(scope, bool(closed), companies):
        return True
    words = scope.replace("|", " ").lower().split()
    if not words:
        return False
    if _year_not_latest(scope, bool(closed), question):
        return True
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
        return True  # a tag but its own closing: proof104's "risk\n<search>"
    if any(not c.isspace() and c not in question for c in _TERM_WORD.sub(" ", terms)):
        return True  # a sign the question has not: "|", ">" (proof104's "risk-to-vAr>-2023 |")
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
    2020), or end short of it ("[Walmart 201 - 2020]", proof100's weights under a rule of
    whole years only)."""
    latest = latest_year(question)
    if not latest:
        return False
    for run in _YEARLIKE.finditer(scope):
        digits = run.group()
        ended = closed or run.end() < len(scope)
        if len(digits) > 2 and not (digits == latest if ended else latest.startswith(digits)):
            return True
    return False


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
    proof87's student, let begin "Incr", wrote "IncrEarnings"; proof95's, let begin
    "Increas", "IncrEaSpn", and let write "Increasd", "IncrEaSd1111111000…"."""
    stem = re.sub(r"(?:ing|ed|es|e|d|s)$", "", option)
    stem = stem if len(stem) >= 3 else option
    return frozenset({option, option + "s", *(stem + ending for ending in _ENDINGS)})


def _closes_answer(tag: str) -> bool:
    """Whether a tag written inside an answer is (on its way to) the answer's own closing:
    proof87's student closed "IncrEasing expenses" with "</search>", and lost the answer."""
    return tag.startswith(ANSWER_CLOSE) or ANSWER_CLOSE.startswith(tag)


# What a figure opens with: a digit, a sign, a currency, a bracket of a negative.
_FIGURE_OPENERS = "-+$€£¥(.,%"


def _opens_figure(written: str) -> bool:
    return written[0].isdigit() or written[0] in _FIGURE_OPENERS


def answer_off_form(segment: str, question: str) -> bool:
    """Whether the answer the `segment` writes is not of the form the question asks: it writes
    a tag other than its closing `</answer>`; for a question asking what drove a change, or
    why (`synthesis.asks_cause`), it opens as a figure does (a digit, a sign); for a choice
    (`offered_options`), its first word is no form of either option (`_forms`); for a
    question opening with a question word (`asks_what`), it is "Yes" or "No"."""
    start = segment.find(ANSWER_OPEN)  # the first: "<answer><answer>" is off
    if start < 0:
        return False
    written = segment[start + len(ANSWER_OPEN) :].lstrip()
    tag = written.find("<")
    if tag >= 0 and not _closes_answer(written[tag:]):
        return True
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


# The `Limits` switches of the rules above.
RULES = (
    "loop_guard",
    "grounded_scope",
    "grounded_terms",
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
        or (limits.yes_no_answers and asks_yes_no(question) and answer_not_yes_no(segment))
        or (limits.statement_filter and searched > 0 and statement_left(segment, question))
        or (limits.answer_form and answer_off_form(segment, question))
    )
