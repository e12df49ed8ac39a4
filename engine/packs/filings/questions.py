"""The filings pack's synthesized questions: what a filing's tables and its accounts of a
change let a question ask, with no model.

- "table": one cell of a year-column table (a header row of years, then rows of a label and
  one value per year), naming the entity and the year, in one of several sentence shapes (a
  student trained on one template learns the template, not the task). Every chunk of the
  entity that holds the same row and value is golden evidence: a filing repeats its tables,
  and a search that finds any copy has found the answer. Labels with table debris are
  skipped.
- "comparison": whether a row rose or fell between its two latest years, answered Yes or No.
- "cause": what drove a change a filing explains ("Marketing expense increased, primarily due
  to business investments…" asks what drove the increase in marketing expense, answered by
  the reason as the filing words it): the answer is words to copy, not a figure.

They make nothing where there are no year-column tables or accounts of a change; the generic
kinds (`engine.documents.synthesis`) fill what they leave (`engine.packs.synthesized_questions`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from engine.documents.chunking import Chunk
from engine.documents.questions import Question
from engine.documents.synthesis import (
    DANGLING_WORDS,
    is_self_contained,
    lower_first,
    question_from,
    sentence_subject,
)
from engine.rewards.text import polarity

# "table": one cell of a year-column table; "comparison": whether a row rose or fell
# between its two latest years (yes/no); "cause": what drove a change a filing explains.
FILINGS_KINDS = ("table", "comparison", "cause")


def filings_questions(
    chunks: Iterable[Chunk],
    n: int,
    seed: int = 0,
    kinds: Iterable[str] = FILINGS_KINDS,
    yes_no_share: float = 0.0,
    cause_share: float = 0.0,
    yes_share: float = 0.5,
) -> list[Question]:
    """Up to n questions of the filings `kinds`, in the shares asked for: up to `cause_share`
    of them what drove a change a filing explains (`cause_questions`), about `yes_no_share`
    of the table questions yes/no comparisons of a row's two latest years (about
    `yes_share` of them answered "Yes"), the rest a lookup of one cell, at most one per
    chunk row label."""
    kinds = set(kinds)
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
    return [*causes, *tables]


def mix_asked(questions: Sequence[Question]) -> dict[str, float]:
    """The shares of `filings_questions` that imitate the customer's own `questions`: yes/no
    comparisons in the share of theirs a Yes or No answers, answered "Yes" as often as
    theirs are, "what drove" questions in the share that ask why."""
    asked = max(len(questions), 1)
    said = [polarity(q.answer) for q in questions if polarity(q.answer)]
    return {
        "yes_no_share": len(said) / asked,
        "cause_share": sum(asks_cause(q.question) for q in questions) / asked,
        "yes_share": said.count("yes") / len(said) if said else 0.5,
    }


_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_VALUE = re.compile(r"\(?-?\$?\(?\d[\d,]*(?:\.\d+)?\)?%?\)?|[—–-]")
_UNIT = re.compile(r"\bin (millions|thousands|billions)\b|\((millions|thousands|billions)\)", re.I)


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
        question = question_from(text, answer, chunk, line, source)
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
            if len(what.split()) > 8 or "," in what or what.split()[-1].lower() in DANGLING_WORDS:
                continue
            candidates.append((chunk, year.group(0), m))
    rng = random.Random(seed)
    rng.shuffle(candidates)
    questions, asked = [], set()
    flat: dict[str, list[tuple[str, str]]] = {}  # a document's chunks, one space between words
    for chunk, year, m in candidates:
        what, went = sentence_subject(m.group("what").strip(" ,")), m.group("went")
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
        question = question_from(text, answer, chunk, m.group(0), "offline-cause")
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


def _lookup(row: TableRow, chunk: Chunk, rng: random.Random):
    """A one-cell question on the row's first year with a value: (text, answer, [(year,
    column)])."""
    i = next((i for i, v in enumerate(row.values) if not _blank(v)), None)
    if i is None:
        return None
    text = rng.choice(_SHAPES).format(e=chunk.entity, l=lower_first(row.label), y=row.years[i])
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
        e=chunk.entity, l=lower_first(row.label), a=row.years[earlier], b=row.years[later]
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
