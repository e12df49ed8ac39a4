"""Questions when the customer has none: question / answer / golden-chunk triples from
chunks.

Two generators, one filter:
- `offline_questions` needs no model: it reads financial-style tables (a header row of
  years, then rows of a label and one value per year) and asks for one cell, naming
  the entity and the year, in one of several sentence shapes (a student trained on one
  template learns the template, not the task). Every chunk of the entity that holds the
  same row and value is golden evidence: a filing repeats its tables, and a search that
  finds any copy has found the answer. Labels with table debris are skipped.
- `teacher_questions` asks a teacher model on any OpenAI-compatible endpoint to write a
  question and answer from a chunk.
- `is_self_contained` drops questions that are ambiguous without the chunk: a question
  must name its entity and a period.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterable

from workers.documents.chunking import Chunk
from workers.documents.questions import Evidence, Question, question_id

_YEAR = re.compile(r"\b(?:19|20)\d\d\b")
_PERIOD = re.compile(
    r"\b(?:19|20)\d\d\b|\bFY\s?'?\d{2,4}\b|\bQ[1-4]\b|\b(?:first|second|third|fourth) quarter\b",
    re.IGNORECASE,
)
_VALUE = re.compile(r"\(?-?\$?\(?\d[\d,]*(?:\.\d+)?\)?%?\)?|[—–-]")
_UNIT = re.compile(r"\bin (millions|thousands|billions)\b|\((millions|thousands|billions)\)", re.I)

TEACHER_PROMPT = """You write exam questions about a company's documents.
Entity: {entity}
Document: {doc}
Passage:
\"\"\"
{text}
\"\"\"
Write ONE factual question that this passage answers, and its short answer.
The question must name the entity ({entity}) and the period (year, quarter or date) it is
about, so that it makes sense without the passage. Reply with JSON only:
{{"question": "...", "answer": "..."}}"""


def is_self_contained(question: str, entity: str | None) -> bool:
    """True if the question names its entity (any distinctive word of it) and a period."""
    if not entity or not _PERIOD.search(question):
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


def table_facts(chunk: Chunk, with_raw: bool = False) -> list[tuple]:
    """(row label, year, value) cells of year-column tables in a chunk; with `with_raw`
    also the value as the table writes it."""
    facts = []
    years: list[str] = []
    unit = _unit(chunk.text)
    for line in chunk.text.splitlines():
        found = _YEAR.findall(line)
        if len(found) >= 2 and len(_YEAR.sub("", line).split()) <= 6:
            years = found  # a header row: the columns of the rows below it
            continue
        if not years:
            continue
        label, values = _split_row(line)
        if len(values) != len(years) or not 3 <= len(label) <= 80 or _YEAR.search(label):
            continue
        # A row starting in lower case is the wrapped tail of the row above: no label.
        if label[0].islower():
            continue
        per_share = "per share" in label.lower() or "eps" in label.lower().split()
        row_unit = "" if per_share else unit
        for year, value in zip(years, values, strict=True):
            if value.strip() in ("—", "-"):
                continue
            fact = (label, year, _answer(value, row_unit))
            facts.append((*fact, value) if with_raw else fact)
    return facts


def _split_row(line: str) -> tuple[str, list[str]]:
    """A table row as (label, trailing values): "Inventories (509) (387) 57"."""
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


def offline_questions(chunks: Iterable[Chunk], n: int = 100, seed: int = 0) -> list[Question]:
    """Up to n questions, each about one table cell, at most one per chunk row label."""
    chunks = list(chunks)
    rng = random.Random(seed)
    candidates = []
    for chunk in chunks:
        seen_labels = set()
        for label, year, answer, raw in table_facts(chunk, with_raw=True):
            if label.lower() in seen_labels or not chunk.entity or not _clean_label(label):
                continue
            seen_labels.add(label.lower())
            candidates.append((chunk, label, year, answer, raw))
    rng.shuffle(candidates)
    by_entity: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_entity.setdefault(chunk.entity or "", []).append(chunk)
    questions, asked = [], set()
    for chunk, label, year, answer, raw in candidates:
        if (chunk.entity, label.lower(), year) in asked:
            continue
        text = rng.choice(_SHAPES).format(e=chunk.entity, l=_lower_first(label), y=year)
        if not is_self_contained(text, chunk.entity):
            continue
        asked.add((chunk.entity, label.lower(), year))
        row = next(line for line in chunk.text.splitlines() if line.strip().startswith(label[:20]))
        question = _question(text, answer, chunk, row, "offline-table")
        question.golden_chunk_ids = [
            c.id for c in by_entity[chunk.entity] if label in c.text and raw in c.text
        ] or [chunk.id]
        question.evidence[0].chunk_ids = list(question.golden_chunk_ids)
        questions.append(question)
        if len(questions) >= n:
            break
    return questions


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
        prompt = TEACHER_PROMPT.format(entity=chunk.entity, doc=chunk.doc, text=chunk.text[:4000])
        reply = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": prompt}], temperature=0
        )
        pair = _parse_pair(reply.choices[0].message.content or "")
        if pair is None or pair[0] in asked or not is_self_contained(pair[0], chunk.entity):
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
    value = value.replace(" ", "")
    negative = value.startswith("(") and value.endswith(")") or value.startswith("-")
    number = value.strip("()-")
    if number.endswith("%"):
        return ("-" if negative else "") + number
    dollar = "$" if "$" in number else ""
    number = number.replace("$", "").strip("()")
    return f"{'-' if negative else ''}{dollar}{number}{unit}"


def _lower_first(label: str) -> str:
    # Keep acronyms ("PP&E", "EBITDA") as they are; lower an ordinary capitalised word.
    first, _, rest = label.partition(" ")
    if first[:1].isupper() and first[1:].islower():
        first = first.lower()
    return f"{first} {rest}".strip()
