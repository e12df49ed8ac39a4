"""Questions when the customer has none: question / answer / golden-chunk triples from
chunks.

Two generators, one filter:
- `offline_questions` needs no model. It makes questions of several kinds, chosen with
  `kinds`:
  - the generic kinds (`GENERIC_KINDS`) read prose in any domain, in the document's own
    words: a sentence saying what a thing does ("Division by zero raises the
    ZeroDivisionError exception" asks what division by zero raises), what a term is ("A
    block is a piece of program text that is executed as a unit" asks what a block is),
    or how many of something there are ("There are three types of numeric literals").
    The answer is a short span of the sentence, and every chunk of the document holding
    the sentence is golden evidence. A question asks only about a subject that names
    something the corpus rarely mentions, and names its entity when the subject alone
    would not pick out one entity's documents.
  - the filings kinds (`FILINGS_KINDS`) read financial-style tables (a header row of years,
    then rows of a label and one value per year) and ask for one cell, naming the entity
    and the year, in one of several sentence shapes (a student trained on one template
    learns the template, not the task). Every chunk of the entity that holds the same row
    and value is golden evidence: a filing repeats its tables, and a search that finds any
    copy has found the answer. Labels with table debris are skipped. With `cause_share`,
    that share are "what drove" questions read off a filing's own account of a change
    ("Marketing expense increased, primarily due to business investments…" asks what
    drove the increase in marketing expense, answered by the reason as the filing words
    it): the answer is words to copy from the results, not a figure.
- `teacher_questions` asks a teacher model on any OpenAI-compatible endpoint to write a
  question and answer from a chunk.
- `is_self_contained` drops questions that are ambiguous without the chunk: a question
  must name its entity, and a period when its passage is dated (a filing's tables and
  teacher questions on a filing's pages).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from itertools import zip_longest

from engine.documents.chunking import Chunk
from engine.documents.questions import Evidence, Question, question_id

_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_PERIOD = re.compile(
    r"\b(?:19|20)\d\d\b|\bFY\s?'?\d{2,4}\b|\bQ[1-4]\b|\b(?:first|second|third|fourth) quarter\b",
    re.IGNORECASE,
)
_VALUE = re.compile(r"\(?-?\$?\(?\d[\d,]*(?:\.\d+)?\)?%?\)?|[—–-]")
_UNIT = re.compile(r"\bin (millions|thousands|billions)\b|\((millions|thousands|billions)\)", re.I)

TEACHER_PROMPT = """You write exam questions about an organisation's documents.
Entity: {entity}
Document: {doc}
Passage:
\"\"\"
{text}
\"\"\"
Write ONE factual question that this passage answers, and its short answer.
The question must name the entity ({entity}){period}, so that it makes sense without
the passage. Reply with JSON only:
{{"question": "...", "answer": "..."}}"""
# Said only of a passage that dates itself (a filing's year): a manual's passage has no
# period to name, and a question about it needs none.
_TEACHER_PERIOD = " and the period (year, quarter or date) it is about"


def is_self_contained(question: str, entity: str | None, period: bool = True) -> bool:
    """True if the question names its entity (any distinctive word of it) and, with
    `period`, a period."""
    if not entity or (period and not _PERIOD.search(question)):
        return False
    lowered = question.lower()
    words = [w for w in re.findall(r"[a-z0-9&]+", entity.lower()) if len(w) >= 2] or [
        entity.lower()
    ]
    squashed = re.sub(r"[^a-z0-9&]", "", lowered)
    return (
        entity.lower() in lowered
        or re.sub(r"[^a-z0-9&]", "", entity.lower()) in squashed
        or any(re.search(rf"\b{re.escape(w)}\b", lowered) for w in words if len(w) >= 3)
    )


@dataclass(frozen=True)
class TableRow:
    """One row of a year-column table: its label, the years of the columns and the values
    as the table writes them ("(1,577)"), one per year; `unit` is the table's (" million")."""

    label: str
    years: tuple[str, ...]
    values: tuple[str, ...]
    unit: str

    def answer(self, i: int) -> str:
        """The i-th value as an answer: "-1,577 million"."""
        return _answer(self.values[i], self.unit)

    def quote(self, i: int) -> str:
        """The row's label and its i-th value as the table writes them, then the unit:
        "Purchases of property, plant and equipment (PP&E) (1,577) million"."""
        return f"{self.label} {self.values[i]}{self.unit}"


def table_rows(chunk: Chunk) -> list[TableRow]:
    """The rows of year-column tables in a chunk (a header row of years, then rows of a
    label and one value per year)."""
    rows = []
    years: list[str] = []
    unit = _unit(chunk.text)
    for line in chunk.text.splitlines():
        found = _YEAR.findall(line)
        if len(found) >= 2 and len(_YEAR.sub("", line).split()) <= 6:
            years = found  # a header row: the columns of the rows below it
            continue
        if not years:
            continue
        label, values = split_row(line)
        if len(values) != len(years) or not 3 <= len(label) <= 80 or _YEAR.search(label):
            continue
        # A row starting in lower case is the wrapped tail of the row above: no label.
        if label[0].islower():
            continue
        per_share = "per share" in label.lower() or "eps" in label.lower().split()
        rows.append(TableRow(label, tuple(years), tuple(values), "" if per_share else unit))
    return rows


def table_facts(chunk: Chunk, with_raw: bool = False) -> list[tuple]:
    """(row label, year, value) cells of year-column tables in a chunk; with `with_raw`
    also the value as the table writes it."""
    facts = []
    for row in table_rows(chunk):
        for i, (year, value) in enumerate(zip(row.years, row.values, strict=True)):
            if _blank(value):
                continue
            fact = (row.label, year, row.answer(i))
            facts.append((*fact, value) if with_raw else fact)
    return facts


def split_row(line: str) -> tuple[str, list[str]]:
    """A table row as (label, trailing values): "Inventories (509) (387) 57"; ("", []) for a
    line that is no row (no label of letters first)."""
    tokens = line.split()
    values: list[str] = []
    while tokens and _VALUE.fullmatch(tokens[-1]):
        values.insert(0, tokens.pop())
    # "$ 5,363" was already joined by tidy_text; a lone "$" before a value is noise.
    label = " ".join(t for t in tokens).rstrip(" :—-$")
    if not re.match(r"[A-Za-z]", label):
        return "", []
    return label, values


# Sentence shapes of a one-cell question ({e} entity, {l} row label, {y} year). Varied on
# purpose, and as customers write them: the entity before or after the figure, a fiscal
# year written "FY2019", a preamble before the question proper.
_SHAPES = (
    "What was {e}'s {l} in {y}?",
    "What is the FY{y} {l} for {e}?",
    "How much was {l} for {e} in fiscal {y}?",
    "According to its financial statements, what did {e} report as {l} for {y}?",
    "In {y}, what was the {l} of {e}?",
    "What amount of {l} did {e} report for fiscal year {y}?",
    "Using the company's annual report, what was {e}'s {l} in FY{y}?",
    "{e}: what was the {l} in {y}? Answer with the figure as reported.",
)
# A label is words, not table debris ("cash and due from banks $27.2 $27.2 $ —").
_CLEAN_LABEL = re.compile(r"[A-Za-z][A-Za-z ,'&()/—–-]*[A-Za-z)]")
_MIN_LABEL_LETTERS = 6  # "Total", "Other", "Net": too vague to ask about alone


def _clean_label(label: str) -> bool:
    letters = sum(ch.isalpha() for ch in label)
    return bool(_CLEAN_LABEL.fullmatch(label)) and letters >= _MIN_LABEL_LETTERS


# Yes/no shapes of a two-year comparison ({a} the earlier year, {b} the later): each asks
# whether the row went up, or whether it went down, so that either answer can be true.
_COMPARISONS = (
    ("Did {e}'s {l} increase from {a} to {b}?", "up"),
    ("Was {e}'s {l} lower in {b} than in {a}?", "down"),
    ("Did {e} report a decline in {l} between FY{a} and FY{b}?", "down"),
    ("Has {e}'s {l} grown from fiscal {a} to fiscal {b}?", "up"),
    ("Is the {l} {e} reported for {b} higher than for {a}?", "up"),
    ("Did {l} fall at {e} from {a} to {b}?", "down"),
)


# Question kinds, by what they read. A pack chooses among them (`kinds=`); the generic
# kinds assume nothing of the documents but sentences.
GENERIC_KINDS = ("action", "definition", "count")
# "completion": a sentence of the documents quoted with one of its rarer words blanked out,
# answered by that word. Any prose makes it, where the kinds above need a sentence of a
# given shape (a manual of 77 pages made 64 of them); its question finds its passage with
# no skill, and what it teaches is reading: the answer is a word of the results to copy.
# Chosen with `completion_questions` (TrainConfig), off by default.
READING_KINDS = ("completion",)
# "table": one cell of a year-column table; "comparison": whether a row rose or fell
# between its two latest years (yes/no); "cause": what drove a change a filing explains.
FILINGS_KINDS = ("table", "comparison", "cause")
ALL_KINDS = GENERIC_KINDS + READING_KINDS + FILINGS_KINDS


def offline_questions(
    chunks: Iterable[Chunk],
    n: int = 100,
    seed: int = 0,
    yes_no_share: float = 0.0,
    cause_share: float = 0.0,
    yes_share: float = 0.5,
    kinds: Iterable[str] = GENERIC_KINDS + FILINGS_KINDS,
) -> list[Question]:
    """Up to n questions of the `kinds` asked for (default every kind but the reading ones).

    The filings kinds come first, in the shares asked for: up to `cause_share` of them
    what drove a change a filing explains (`cause_questions`), about `yes_no_share` of the
    table questions yes/no comparisons of a row's two latest years (about `yes_share` of
    them answered "Yes"), the rest a lookup of one cell, at most one per chunk row label.
    They make nothing where there are no year-column tables or filings' accounts of a
    change, so the generic kinds (`prose_questions`) fill what they leave: all of n on
    manuals, papers or articles, and on filings only what their tables do not fill, so a
    filings run asks what it always asked."""
    kinds = tuple(kinds)
    unknown = sorted(set(kinds) - set(ALL_KINDS))
    if unknown:
        raise ValueError(f"unknown question kinds {unknown}; choose from {list(ALL_KINDS)}")
    chunks = list(chunks)
    causes = []
    if "cause" in kinds and cause_share > 0:
        causes = cause_questions(chunks, round(n * cause_share), seed)
    tables = []
    if "table" in kinds or "comparison" in kinds:
        # Without lookups every table question is a comparison; without comparisons none.
        share = yes_no_share if "table" in kinds else 1.0
        share = share if "comparison" in kinds else 0.0
        tables = _table_questions(chunks, n - len(causes), seed, share, yes_share)
    prose = []
    generic = [k for k in kinds if k in GENERIC_KINDS + READING_KINDS]
    if generic and len(causes) + len(tables) < n:
        prose = prose_questions(chunks, n - len(causes) - len(tables), seed, generic)
    return [*causes, *tables, *prose]


def _table_questions(
    chunks: list[Chunk], n: int, seed: int, yes_no_share: float, yes_share: float
) -> list[Question]:
    rng = random.Random(seed)
    candidates = []
    for chunk in chunks:
        seen_labels = set()
        for row in table_rows(chunk):
            if row.label.lower() in seen_labels or not chunk.entity:
                continue
            if not _clean_label(row.label):
                continue
            seen_labels.add(row.label.lower())
            candidates.append((chunk, row))
    rng.shuffle(candidates)
    by_entity: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_entity.setdefault(chunk.entity or "", []).append(chunk)
    questions, asked = [], set()
    for chunk, row in candidates:
        # No draw without comparisons: the lookups of a seed stay those it always gave.
        compare = yes_no_share > 0 and rng.random() < yes_no_share
        made = _comparison(row, chunk, rng, yes_share) if compare else _lookup(row, chunk, rng)
        if made is None:
            continue
        text, answer, read = made
        key = (chunk.entity, row.label.lower(), tuple(y for y, _ in read))
        if key in asked or not is_self_contained(text, chunk.entity):
            continue
        asked.add(key)
        line = next(x for x in chunk.text.splitlines() if x.strip().startswith(row.label[:20]))
        source = "offline-comparison" if compare else "offline-table"
        question = _question(text, answer, chunk, line, source)
        if compare:
            # The figures the answer is worked out from: the student must be shown them.
            question.meta["reads"] = [row.answer(i) for _, i in read]
        else:
            # The answer as the row says it, which a teacher may write instead (`quoted`).
            question.meta["quoted"] = row.quote(read[0][1])
        raws = [row.values[i] for _, i in read]
        question.golden_chunk_ids = [
            c.id
            for c in by_entity[chunk.entity]
            if row.label in c.text and all(raw in c.text for raw in raws)
        ] or [chunk.id]
        question.evidence[0].chunk_ids = list(question.golden_chunk_ids)
        questions.append(question)
        if len(questions) >= n:
            break
    return questions


_WENT = ("increased", "decreased", "declined", "grew", "rose", "fell", "improved")
_BECAUSE = ("due to", "driven by", "as a result of", "reflecting", "attributable to")
# A filing's account of a change: "<what> increased <by how much>, primarily due to <why>."
_CAUSE = re.compile(
    r"(?:^|(?<=[.;:]\s)|(?<=\n))(?P<what>[A-Z][A-Za-z&'/, -]{3,70}?)\s+"
    r"(?P<went>" + "|".join(_WENT) + r")\b"
    r"(?P<how>[^.;:\n]{0,80}?),?\s+(?:primarily |mainly |largely |principally )?"
    r"(?:" + "|".join(_BECAUSE) + r")\s+"
    r"(?P<why>[^.;\n]{8,160}?)(?=[.;]|, partially offset|, offset|\n\n|$)",
)
_UP = {"increased", "grew", "rose", "improved"}
_DOC_YEAR = re.compile(r"(?<!\d)(?:19|20)\d\d(?!\d)")
# Subjects that are no measure a question can name on its own.
_VAGUE_SUBJECT = re.compile(
    r"^(?:it|this|these|that|which|we|our|the increase|the decrease)\b", re.I
)
# Page debris run into a subject: "table of Contents EXPENSES Total expenses".
_SUBJECT_DEBRIS = re.compile(r".\b(?:The|Total|Table|Contents)\b|\b[A-Z]{5,}\b|[Cc]ontents")
# A subject ending in one of these is a clause cut short ("primary factors that").
_DANGLING = frozenset("that which of the and or in for to by as its their".split())
# A question that asks why something changed, as the customer's own may.
_ASKS_CAUSE = re.compile(
    r"\bwhat drove\b|\bwhy (?:did|do|does|has|have|is|are|was|were)\b"
    r"|\bwhat (?:was|were) the (?:main )?(?:reason|driver)",
    re.I,
)


def asks_cause(question: str) -> bool:
    """Whether a question asks what drove a change, or why ("What drove gross margin…")."""
    return bool(_ASKS_CAUSE.search(question))


# Sentence shapes of a "what drove" question ({e} entity, {w} what changed, {c} "increase"
# or "decrease", {v} the verb as the filing writes it, {y} year).
_CAUSE_SHAPES = (
    "What drove the {c} in {e}'s {w} in {y}?",
    "Why did {e}'s {w} {v} in FY{y}?",
    "What was the main reason for the {c} in {w} at {e} in fiscal {y}?",
    "In {y}, what drove {e}'s {w} to {v}?",
)
_BASE_VERB = {
    "increased": "increase",
    "decreased": "decrease",
    "declined": "decline",
    "grew": "grow",
    "rose": "rise",
    "fell": "fall",
    "improved": "improve",
}


def cause_questions(chunks: Iterable[Chunk], n: int, seed: int = 0) -> list[Question]:
    """Up to n "what drove" questions, one per measure and document: where a filing says
    why something changed ("Processed revenue increased 28 percent, primarily driven by an
    increase in processed volumes"), the question asks what drove it in the filing's year
    and the answer is the reason as written ("An increase in processed volumes"), golden
    on every chunk of the document that says it (chunks overlap)."""
    by_doc: dict[str, list[Chunk]] = {}
    candidates = []
    for chunk in chunks:
        by_doc.setdefault(chunk.doc, []).append(chunk)
        year = _DOC_YEAR.search(chunk.doc or "")  # "AMERICANEXPRESS_2022_10K": a filing's year
        if not chunk.entity or not year or not _may_tell_a_cause(chunk.text):
            continue
        # A sentence wrapped across lines goes on in lower case; a line that starts in upper
        # case starts anew (after a heading, "Results of operations").
        text = re.sub(r"[ \t]*\n\s*(?=[a-z(])", " ", chunk.text)
        for m in _CAUSE.finditer(text):
            what = m.group("what").strip(" ,")
            if _VAGUE_SUBJECT.match(what) or _SUBJECT_DEBRIS.search(what):
                continue
            if len(what.split()) > 8 or "," in what or what.split()[-1].lower() in _DANGLING:
                continue
            candidates.append((chunk, year.group(0), m))
    rng = random.Random(seed)
    rng.shuffle(candidates)
    questions, asked = [], set()
    flat: dict[str, list[tuple[str, str]]] = {}  # a document's chunks, one space between words
    for chunk, year, m in candidates:
        what, went = _sentence_subject(m.group("what").strip(" ,")), m.group("went")
        key = (chunk.doc, what.lower())
        if key in asked:
            continue
        asked.add(key)
        text = rng.choice(_CAUSE_SHAPES).format(
            e=chunk.entity,
            w=what,
            c="increase" if went in _UP else "decrease",
            v=_BASE_VERB[went],
            y=year,
        )
        why = m.group("why").strip(" ,")
        if re.search(r"\b[A-Z]$", why):  # cut at an abbreviation's point ("from U.S.")
            continue
        answer = why[0].upper() + why[1:]
        question = _question(text, answer, chunk, m.group(0), "offline-cause")
        if not is_self_contained(text, chunk.entity):
            continue
        said = " ".join(m.group(0).split())
        if chunk.doc not in flat:
            flat[chunk.doc] = [(c.id, " ".join(c.text.split())) for c in by_doc[chunk.doc]]
        question.golden_chunk_ids = [i for i, t in flat[chunk.doc] if said in t] or [chunk.id]
        question.evidence[0].chunk_ids = list(question.golden_chunk_ids)
        questions.append(question)
        if len(questions) >= n:
            break
    return questions


def _may_tell_a_cause(text: str) -> bool:
    """A plain search before the sentence pattern, which is slow on every chunk."""
    return any(w in text for w in _BECAUSE) and any(w in text for w in _WENT)


def _sentence_subject(what: str) -> str:
    """A sentence's subject as a question writes it mid-sentence: the first word in lower
    case, unless the next is capitalised too, a name ("Intelligent Cloud revenue")."""
    words = what.split()
    if len(words) > 1 and words[1][:1].isupper():
        return what
    return _lower_first(what)


def _lookup(row: TableRow, chunk: Chunk, rng: random.Random):
    """A one-cell question on the row's first year with a value: (text, answer, [(year,
    column)])."""
    i = next((i for i, v in enumerate(row.values) if not _blank(v)), None)
    if i is None:
        return None
    text = rng.choice(_SHAPES).format(e=chunk.entity, l=_lower_first(row.label), y=row.years[i])
    return text, row.answer(i), [(row.years[i], i)]


def _comparison(row: TableRow, chunk: Chunk, rng: random.Random, yes_share: float = 0.5):
    """A yes/no question on whether the row rose or fell between its two latest years,
    the shape picked so that the answer is "Yes" with probability `yes_share`; None when
    the two are not distinct figures."""
    columns = sorted(range(len(row.years)), key=lambda i: row.years[i], reverse=True)[:2]
    if len(columns) < 2 or row.years[columns[0]] == row.years[columns[1]]:
        return None
    later, earlier = columns
    new, old = _number(row.values[later]), _number(row.values[earlier])
    if new is None or old is None or new == old:
        return None
    went = "up" if new > old else "down"
    want_yes = rng.random() < yes_share
    shape = rng.choice([s for s, d in _COMPARISONS if (d == went) == want_yes])
    text = shape.format(
        e=chunk.entity, l=_lower_first(row.label), a=row.years[earlier], b=row.years[later]
    )
    text = text[0].upper() + text[1:]
    read = [(row.years[earlier], earlier), (row.years[later], later)]
    return text, "Yes" if want_yes else "No", read


def _blank(value: str) -> bool:
    """A dash: the table has no figure in this column."""
    return value.strip() in ("—", "-")


def _number(value: str) -> float | None:
    """A table value as a number, read as `_answer` writes it ("(1,577)" is -1577); a dash
    or debris is None."""
    written = _answer(value, "").replace("$", "").replace(",", "").rstrip("%")
    try:
        return float(written)
    except ValueError:
        return None


# Generic kinds: questions from the sentences of any document. They read English sentence
# shapes (a subject and a verb, "A … is a …", "There are N …"), never one domain's words.

# A sentence starts with a capital letter (or a quoted or emphasised term) and ends at a
# full stop; a chunk's lines are joined first, since hard-wrapped prose breaks them anywhere.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"“*(]?[A-Z])")
# Characters of code, grammars, tables and links: a sentence with several is no prose.
_CODE_CHARS = frozenset("()[]{}=<>|#@\\/+~^`$%")
_MAX_CODE_CHARS = 4
# Emphasis marks around words ("a *block* is"): not part of the words. "**" alone is text.
_EMPHASIS = re.compile(r"(?<![\w*])\*{1,2}(\w[^*]*?)\*{1,2}(?![\w*])")
# Verbs that say what a thing does to or with another, in their base form.
_ACTION_VERBS = (
    "raise", "return", "yield", "produce", "create", "require", "contain", "accept",
    "support", "define", "denote", "represent", "call", "select", "cause", "convert",
    "generate", "provide", "allow", "store", "include", "take", "use", "print", "hold",
    "need", "give", "determine", "specify", "identify", "protect", "prevent",
    "remove", "heat", "cool", "reduce", "show", "display", "indicate", "control", "connect",
    "send", "receive", "replace", "enable", "disable", "delete", "describe", "mean",
)  # fmt: skip
# Left out: verbs that are as often nouns ("list", "measure", "check", "start"), which read
# "the inheritance list usually gives …" as a subject "the inheritance" that lists.
_ADVERB = r"(?:(?:always|only|also|never|usually|generally|normally|first|then|now)\s+)?"
_OBJECT_END = (
    r"(?=\.(?:\s|$)|[,;:]|\s(?:if|when|unless|because|which|that|so|for|with|in|from|on|by|"
    r"as|and|or|but|while|after|before|instead|rather|unlike)\s|$)"
)
_ACTION = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+" + _ADVERB + r"(?P<verb>" + "|".join(_ACTION_VERBS) + r")"
    r"(?P<s>s?)\s+(?P<object>[^,;:]{2,80}?)\s*" + _OBJECT_END
)
# Verbs whose object follows a particle: "X consists of Y" asks what X consists of.
_PHRASAL_VERBS = (
    "consist of", "depend on", "refer to", "belong to", "correspond to", "apply to",
    "result in", "lead to", "rely on", "point to", "differ from", "map to",
)  # fmt: skip
_PHRASAL = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+"
    + _ADVERB
    + r"(?P<verb>"
    + "|".join(v.split()[0] for v in _PHRASAL_VERBS)
    + r")(?P<s>s?)\s+(?P<particle>of|on|to|in|from)\s+(?P<object>[^,;:]{2,80}?)\s*"
    + _OBJECT_END
)
# "Code objects are returned by the built-in compile() function" asks by what they are.
_PASSIVE = re.compile(
    r"^(?P<subject>[^,;:()]{3,60}?)\s+(?P<be>is|are)\s+"
    + _ADVERB
    + r"(?P<done>[a-z]{3,}ed)\s+by\s+(?P<object>[^,;:]{2,80}?)\s*"
    + _OBJECT_END
)
_DEFINITION = re.compile(
    r"^(?P<article>An?|The)\s+(?P<term>[^,;:()]{2,40}?)\s+(?P<be>is|are)\s+"
    r"(?P<meaning>(?:an?|the|one)\s+[^;:]{5,160}?)\s*(?=\.(?:\s|$)|[;:]|$)"
)
_NUMBER_WORDS = "two three four five six seven eight nine ten eleven twelve".split()
_COUNT = re.compile(
    r"\b[Tt]here (?:is|are) (?:exactly |only |currently only |currently )?"
    r"(?P<n>\d+|" + "|".join(_NUMBER_WORDS) + r")\s+(?P<noun>[^,;:.()]{3,60}?)"
    r"(?=[.,;:]|\s(?:in|for|that|which|with|on|to|from|at|and|but|whose)\s|$)"
)
# A subject that names nothing a question can ask about on its own.
_VAGUE_WORDS = frozenset(
    "it its this that these those they them there here we you he she which such each both "
    "all some other others one then otherwise also however thus note see if when for in as "
    "any many most several another simply just only not to unless although because since "
    "while whether where after before once until though".split()
)
# Words that point at something said elsewhere ("a similar action", "the above rule"): a
# subject holding one names nothing on its own.
_REFERRING_WORDS = frozenset(
    "similar same following above below former latter previous next such this these that "
    "those".split()
)
_STOP_WORDS = frozenset(
    "the a an of to in on for by with and or but not no is are be been was were as at from "
    "its it this that these those their there which what when where who how than then so "
    "into onto can may might must should will would do does did has have had".split()
)
# A subject holding one of these is a clause, not a name ("the statement will bind …").
_CLAUSE_WORDS = frozenset(
    "is are was were be been can may might must should will would shall could cannot has have "
    "had".split()
)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*")
_MAX_ANSWER_WORDS = 16
# A word names something distinctive when at most this share of the chunks hold it.
_RARE_SHARE = 0.05
_SHAPES_ACTION = (
    "What {does} {s} {v}?",
    "According to the documents, what {does} {s} {v}?",
    "Do you know what {s} {vs}?",
)
_SHAPES_DEFINITION = (
    "What {be} {art}{t}?",
    "What does the term {t} mean?",
    "How {be} {art}{t} defined?",
)
_SHAPES_COUNT = ("How many {noun} are there?", "What is the number of {noun}?")


@dataclass(frozen=True)
class _Fact:
    """A question read off one sentence: its kind, the words it asks about (`subject`), the
    question, the answer span and the sentence (the evidence)."""

    kind: str
    subject: str
    question: str
    answer: str
    sentence: str


def prose_questions(
    chunks: Iterable[Chunk],
    n: int = 100,
    seed: int = 0,
    kinds: Iterable[str] = GENERIC_KINDS,
) -> list[Question]:
    """Up to n lookup questions read off prose sentences, the kinds taken in turn: what a
    thing does (`action`), what a term is (`definition`), how many of something there are
    (`count`), which word a quoted sentence is missing (`completion`). The answer is a
    short span of the sentence; golden evidence is every chunk of the document that holds
    the sentence. A question asks only about a subject with a word few chunks hold, and
    names its entity ("In <entity>, …") when the subject's words are also in another
    entity's chunks (a quoted sentence names its passage itself)."""
    kinds = [k for k in GENERIC_KINDS + READING_KINDS if k in set(kinds)]
    chunks = list(chunks)
    if not chunks or not kinds or n < 1:
        return []
    rng = random.Random(seed)
    flat = [(c, " ".join(c.text.split())) for c in chunks]
    holding: dict[str, list[int]] = {}  # a word -> the chunks that hold it
    for i, (_, text) in enumerate(flat):
        for word in {w.lower() for w in _WORD.findall(text)}:
            holding.setdefault(word, []).append(i)
    rare = max(2, _RARE_SHARE * len(chunks))

    def distinctive(phrase: str) -> bool:
        words = [w.lower() for w in _WORD.findall(phrase)]
        return any(w not in _STOP_WORDS and len(holding.get(w, ())) <= rare for w in words)

    def elsewhere(subject: str, entity: str) -> bool:
        """Whether another entity's chunks hold the subject too: then the question must say
        whose documents it asks about. Only chunks holding its rarest word can."""
        words = {w.lower() for w in _WORD.findall(subject)}
        rarest = min(words, key=lambda w: len(holding.get(w, ())))
        needle = subject.lower()
        return any(
            flat[i][0].entity != entity and needle in flat[i][1].lower()
            for i in holding.get(rarest, ())
        )

    by_kind: dict[str, list[tuple[Chunk, _Fact]]] = {k: [] for k in kinds}
    for chunk in chunks:
        for sentence in _sentences(chunk.text):
            for fact in _facts(sentence, kinds, rng, lambda word: len(holding.get(word, ()))):
                if distinctive(fact.subject):
                    by_kind[fact.kind].append((chunk, fact))
    for candidates in by_kind.values():
        rng.shuffle(candidates)
    # Kinds in turn, so that a corpus rich in one sentence shape still gets every kind.
    queue = [c for group in zip_longest(*by_kind.values()) for c in group if c is not None]

    questions: list[Question] = []
    asked: set[tuple] = set()
    by_doc: dict[str, list[tuple[str, str]]] = {}
    for chunk, text in flat:
        by_doc.setdefault(chunk.doc, []).append((chunk.id, text))
    for chunk, fact in queue:
        key = (chunk.doc, fact.kind, fact.subject.lower())
        if key in asked:
            continue
        asked.add(key)
        text = fact.question
        # A quoted sentence names its passage itself; a subject may need its entity named.
        if fact.kind != "completion" and chunk.entity and elsewhere(fact.subject, chunk.entity):
            text = f"In {chunk.entity}, {text[0].lower()}{text[1:]}"
        question = _question(text, fact.answer, chunk, fact.sentence, f"offline-{fact.kind}")
        golden = [i for i, t in by_doc[chunk.doc] if fact.sentence in t] or [chunk.id]
        question.golden_chunk_ids = golden
        question.evidence[0].chunk_ids = list(golden)
        questions.append(question)
        if len(questions) >= n:
            break
    return questions


def _sentences(text: str) -> list[str]:
    """The prose sentences of a chunk: long enough to say something, short enough to be
    one statement, not code. Headings end where they stand; the rest of the lines are
    joined, since hard-wrapped prose breaks sentences anywhere."""
    out = []
    for block in _blocks(text):
        for sentence in _SENTENCE_END.split(block):
            sentence = sentence.strip().lstrip("•·▪–- ")  # a list item's bullet
            if not 30 <= len(sentence) <= 300 or sentence[-1] != ".":
                continue
            if sum(ch in _CODE_CHARS for ch in sentence) > _MAX_CODE_CHARS:
                continue
            out.append(sentence)
    return out


def _blocks(text: str) -> list[str]:
    """A chunk's text as runs of lines without headings: a heading is a line underlined by
    a rule ("Slicings" over "*****"), or a short line without a full stop before a line that
    starts anew ("Value comparisons" before "The operators …")."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    blocks: list[list[str]] = [[]]
    for i, line in enumerate(lines):
        following = lines[i + 1] if i + 1 < len(lines) else ""
        rule = not _WORD.search(line)
        underlined = bool(following) and not _WORD.search(following) and len(following) >= 3
        heading = len(line.split()) <= 6 and line[-1:] not in ".,;:" and following[:1].isupper()
        if rule or underlined or heading:
            blocks.append([])
        else:
            blocks[-1].append(line)
    return [" ".join(b) for b in blocks if b]


def _facts(
    sentence: str, kinds: list[str], rng: random.Random, chunks_holding: Callable[[str], int]
) -> list[_Fact]:
    plain = _EMPHASIS.sub(r"\1", sentence)
    facts = []
    if "action" in kinds:
        facts.extend(_action_facts(plain, sentence, rng))
    if "definition" in kinds and (m := _DEFINITION.match(plain)):
        term = m.group("term").strip()
        answer = _span(m.group("meaning"))
        # A term with a determiner or a verb inside is a clause ("constructor builds a
        # tuple whose items"): a term is a few words naming one thing.
        inner = {w.lower() for w in term.split()}
        named = len(term.split()) <= 5 and not inner & {"a", "an", "the", "this", "that"}
        if named and _names_a_thing(term) and answer and not _given_away(answer, term):
            be = m.group("be")
            article = "" if be == "are" else m.group("article").lower() + " "
            text = rng.choice(_SHAPES_DEFINITION).format(be=be, art=article, t=term)
            facts.append(_Fact("definition", term, text, answer, sentence))
    if "completion" in kinds and (fact := _completion_fact(plain, sentence, rng, chunks_holding)):
        facts.append(fact)
    if "count" in kinds:
        for m in _COUNT.finditer(plain):
            noun = m.group("noun").strip()
            content = [w for w in _WORD.findall(noun) if w.lower() not in _STOP_WORDS]
            # "How many levels are there?" asks about nothing in particular; "types of
            # changes we can make" holds a clause.
            lowered = {w.lower() for w in noun.split()}
            if len(content) < 2 or noun.split()[-1].lower() in _DANGLING:
                continue
            if lowered & (_CLAUSE_WORDS | _VAGUE_WORDS | {"i", "our", "your", "my"}):
                continue
            text = rng.choice(_SHAPES_COUNT).format(noun=noun)
            facts.append(_Fact("count", noun, text, m.group("n"), sentence))
    return facts


_SHAPES_COMPLETION = (
    'Which word is missing from this sentence of the documents: "{s}"?',
    'What word fills the blank in "{s}"?',
    'Complete the sentence with one word: "{s}"',
)
_BLANK = "___"
# A word worth blanking: a name, a keyword, an identifier ("ZeroDivisionError", "__bases__",
# "nonlocal"); no digits alone, nothing shorter than four characters.
_BLANKABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")


def _completion_fact(
    plain: str, sentence: str, rng: random.Random, chunks_holding: Callable[[str], int]
) -> _Fact | None:
    """The sentence with one of its words blanked: a word that is no stop word, occurs
    once in it and is not its first (a sentence's opening word is its subject more often
    than what it says), one of its two rarest in the corpus (`chunks_holding` a word): a
    name or a term the passage is about, rather than a word any sentence could hold."""
    words = list(_BLANKABLE.finditer(plain))
    counts = Counter(m.group().lower() for m in words)
    candidates = [
        m
        for m in words
        if m.start() > 0 and m.group().lower() not in _STOP_WORDS and counts[m.group().lower()] == 1
    ]
    if not candidates:
        return None
    candidates.sort(key=lambda m: chunks_holding(m.group().lower()))
    m = rng.choice(candidates[:2])
    quoted = (plain[: m.start()] + _BLANK + plain[m.end() :]).replace('"', "'")
    question = rng.choice(_SHAPES_COMPLETION).format(s=quoted)
    return _Fact("completion", m.group(), question, m.group(), sentence)


def _action_facts(plain: str, sentence: str, rng: random.Random) -> list[_Fact]:
    """What a thing does ("X raises Y", "X consists of Y"), or what is done to it ("X is
    returned by Y"), as a question about X answered by Y."""
    found = []
    for pattern in (_ACTION, _PHRASAL, _PASSIVE):
        m = pattern.match(plain)
        if not m:
            continue
        subject = m.group("subject").strip()
        said = m.group("object")
        rest = plain[m.end("object") :].split(". ")[0]
        if rest.startswith(",") and re.search(r"\s(?:and|or)\s", rest):
            said += rest.rstrip(".")  # a list ("the "str", "list" and "tuple" classes")
        answer = _span(said)
        if pattern is _PASSIVE:
            plural = m.group("be") == "are"
        else:
            plural = not m.group("s")
        # Subject and verb agree, or the verb was a noun ("the spot yield curve approach
        # does not …", "unless the context require"): a verb without -s needs a plural.
        agrees = not plural or subject.split()[-1].lower().endswith("s")
        # An object holding a negation or a second verb is a clause cut short, no thing.
        clause = {w.lower() for w in answer.split()} & (_CLAUSE_WORDS | {"does", "do", "not"})
        named = answer and _names_a_thing(subject) and not _given_away(answer, subject)
        if not (agrees and not clause and named):
            continue
        s = _mid_sentence(subject)
        if pattern is _PASSIVE:
            text = f"By what {m.group('be')} {s} {m.group('done')}?"
        else:
            verb = m.group("verb")
            if pattern is _PHRASAL:
                verb = f"{verb} {m.group('particle')}"
            shape = rng.choice(_SHAPES_ACTION)
            first, _, particle = verb.partition(" ")
            text = shape.format(
                does="do" if plural else "does",
                s=s,
                v=verb,
                vs=f"{first}{'' if plural else 's'} {particle}".strip(),
            )
        found.append(_Fact("action", subject, text, answer, sentence))
    return found


def _mid_sentence(subject: str) -> str:
    """A sentence's subject as a question writes it after its first words: an opening
    article in lower case ("A frame" -> "a frame"), a name as written."""
    first, _, rest = subject.partition(" ")
    if first in ("A", "An", "The"):
        return f"{first.lower()} {_sentence_subject(rest) if rest else ''}".strip()
    return _sentence_subject(subject)


def _names_a_thing(subject: str) -> bool:
    """A subject a question can name on its own: a few words, not a pronoun or a clause,
    and no second sentence run into it ("Frame objects Frame objects represent")."""
    words = subject.split()
    if not 1 <= len(words) <= 8 or words[0].lower().strip('"“') in _VAGUE_WORDS:
        return False
    if words[0].lower() in _STOP_WORDS - {"the", "a", "an"}:
        return False
    if words[-1].lower() in _DANGLING or words[-1].lower() in _STOP_WORDS:
        return False
    lowered = [w.lower().replace("’", "'") for w in words]
    if any(w in _CLAUSE_WORDS or w in _REFERRING_WORDS or w.endswith("n't") for w in lowered):
        return False
    # A capitalised word after a lower-case one starts a new sentence or heading, unless it
    # is quoted or a name used mid-sentence throughout (then it is capitalised after "the").
    return not any(
        later[:1].isupper() and earlier[:1].islower() and earlier.lower() not in ("the", "a")
        for earlier, later in zip(words, words[1:], strict=False)
    )


def _span(text: str) -> str:
    """An answer span: the words as written, without a leading article, at most
    `_MAX_ANSWER_WORDS` words (cut at a comma if longer; none if still too long), and
    never a bracket or quote left open."""
    text = text.strip(" ,")
    if len(text.split()) > _MAX_ANSWER_WORDS:
        text = text.split(",")[0].strip()
    text = re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.I)
    if "(" in text and ")" not in text.split("(", 1)[1]:
        text = text.split("(", 1)[0].strip()
    if text.count('"') % 2 or text.count(")") > text.count("("):
        return ""
    words = text.split()
    if not 1 <= len(words) <= _MAX_ANSWER_WORDS or not _WORD.search(text):
        return ""
    if words[0].lower() in _STOP_WORDS or words[-1].lower() in _DANGLING:
        return ""
    if words[0].lower().endswith("ly"):  # "recursively deletes …": a verb phrase, no thing
        return ""
    if re.search(r"\b[A-Z]$", text):  # cut at an abbreviation's point ("a B.S. in …")
        return ""
    if len(words) == 1 and words[0].lower() in {"one", *_NUMBER_WORDS}:
        return ""  # "consists of one or more clauses" cut at "or": no answer
    return text[0].upper() + text[1:]


def _given_away(answer: str, subject: str) -> bool:
    """Whether the question already says the answer: every content word of the answer is
    in the subject."""
    said = {w.lower() for w in _WORD.findall(subject)}
    words = {w.lower() for w in _WORD.findall(answer)} - _STOP_WORDS
    return not words or words <= said


def teacher_questions(
    chunks: Iterable[Chunk], client, model: str, n: int = 100, seed: int = 0
) -> tuple[list[Question], int]:
    """Up to n teacher-written questions and how many replies were rejected (unparsable
    or not self-contained). `client` is an `openai.OpenAI` (any compatible endpoint)."""
    pool = [c for c in chunks if c.entity and len(c.text) >= 200]
    random.Random(seed).shuffle(pool)
    questions, rejected, asked = [], 0, set()
    for chunk in pool:
        if len(questions) >= n:
            break
        text = chunk.text[:4000]
        dated = bool(_PERIOD.search(text))
        prompt = TEACHER_PROMPT.format(
            entity=chunk.entity, doc=chunk.doc, text=text, period=_TEACHER_PERIOD if dated else ""
        )
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], temperature=0
        )
        pair = _parse_pair(reply.choices[0].message.content or "")
        if (
            pair is None
            or pair[0] in asked
            or not is_self_contained(pair[0], chunk.entity, period=dated)
        ):
            rejected += 1
            continue
        asked.add(pair[0])
        questions.append(_question(pair[0], pair[1], chunk, chunk.text, f"teacher:{model}"))
    return questions, rejected


def _question(text: str, answer: str, chunk: Chunk, evidence: str, source: str) -> Question:
    return Question(
        id=question_id(f"{chunk.id} {text}"),
        question=text,
        answer=answer,
        entity=chunk.entity,
        evidence=[Evidence(text=evidence, doc=chunk.doc, page=chunk.page, chunk_ids=[chunk.id])],
        golden_chunk_ids=[chunk.id],
        meta={"source": source},
    )


def _parse_pair(content: str) -> tuple[str, str] | None:
    match = re.search(r"\{.*\}", content, re.DOTALL)
    try:
        data = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    question, answer = (
        str(data.get("question") or "").strip(),
        str(data.get("answer") or "").strip(),
    )
    return (question, answer) if question and answer else None


def _unit(text: str) -> str:
    match = _UNIT.search(text)
    if not match:
        return ""
    word = (match.group(1) or match.group(2)).lower()
    return " " + word.rstrip("s")


def _answer(value: str, unit: str) -> str:
    """A table value as an answer: "(1,577)" and "$(952)" are negative, "5.2%" keeps no unit."""
    value = value.replace(" ", "")
    dollar = "$" if "$" in value else ""
    bare = value.replace("$", "")
    negative = bare.startswith(("(", "-"))
    number = bare.replace("(", "").replace(")", "").lstrip("-")
    sign = "-" if negative else ""
    if number.endswith("%"):
        return sign + number
    return f"{sign}{dollar}{number}{unit}"


def _lower_first(label: str) -> str:
    # Keep acronyms ("PP&E", "EBITDA") as they are; lower an ordinary capitalised word.
    first, _, rest = label.partition(" ")
    if first[:1].isupper() and first[1:].islower():
        first = first.lower()
    return f"{first} {rest}".strip()
