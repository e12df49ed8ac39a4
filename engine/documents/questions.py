"""Question sets: loading them from JSONL or CSV, and splitting them by entity.

A question file is validated as a whole: every bad line is reported with its line
number, and nothing is returned unless every line is good, so a customer fixes the
file once instead of discovering errors one upload at a time.

Pages in `Evidence` are always 1-based. Files in the FinanceBench format (records with
a `company` key) carry 0-based evidence pages, and are converted on load.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Evidence:
    """A golden reference passage: the text that answers the question, and where it is."""

    text: str
    doc: str | None = None
    page: int | None = None
    # Filled by evidence mapping: the chunks that contain this passage.
    chunk_ids: list[str] = field(default_factory=list)


@dataclass
class Question:
    id: str
    question: str
    answer: str
    entity: str | None
    evidence: list[Evidence]
    golden_chunk_ids: list[str] = field(default_factory=list)
    meta: dict = field(default_factory=dict)


class QuestionFileError(ValueError):
    """A question file with one or more bad lines; `problems` lists (line number, message)."""

    def __init__(self, path: str | Path, problems: list[tuple[int, str]]):
        self.path = str(path)
        self.problems = problems
        if all(n == 0 for n, _ in problems):  # the file as a whole (line 0): no line to name
            super().__init__(f"{self.path}: {'; '.join(m for _, m in problems)}, nothing loaded")
            return
        lines = "\n".join(f"  line {n}: {msg}" for n, msg in problems)
        super().__init__(f"{self.path}: {len(problems)} bad line(s), nothing loaded:\n{lines}")


SEAL = "SEALED"  # the file beside a sealed question file


class SealedQuestionsError(QuestionFileError):
    """A question file kept sealed: a `SEALED` file beside it says that it is scored once, for
    a frozen preset, so that no setting is chosen by its answers (docs/evaluation.md). Opened
    by naming its folder in `SLEUTH_UNSEAL`, a deliberate act that a command line shows."""

    def __init__(self, path: Path):
        self.path = str(path)
        self.problems = []
        ValueError.__init__(
            self,
            f"{path} is sealed ({path.parent / SEAL}): it is scored once, for a frozen preset. "
            f"To do that, run with SLEUTH_UNSEAL={path.parent.name}.",
        )


def check_unsealed(path: Path) -> None:
    """Raise SealedQuestionsError when `path` is sealed and not opened by `SLEUTH_UNSEAL`."""
    if (path.parent / SEAL).exists():
        opened = os.environ.get("SLEUTH_UNSEAL", "").split(",")
        if path.parent.name not in opened:
            raise SealedQuestionsError(path)


def question_id(question: str) -> str:
    """A stable id for a question that came without one."""
    return "q_" + hashlib.sha1(question.strip().encode()).hexdigest()[:12]


def load_questions(path: str | Path) -> list[Question]:
    """Read a question file (.jsonl/.json lines, or .csv) and return every question in it.

    Raises QuestionFileError listing every bad line (or saying the file is not UTF-8 text),
    SealedQuestionsError for a sealed file not opened; FileNotFoundError if it is missing.
    """
    path = Path(path)
    check_unsealed(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as error:
        raise QuestionFileError(path, [(0, f"not UTF-8 text (byte {error.start})")]) from None
    if path.suffix.lower() == ".csv":
        rows = _csv_records(text)
    else:
        rows = _jsonl_records(text)
    questions: list[Question] = []
    problems: list[tuple[int, str]] = []
    seen_ids: dict[str, int] = {}
    for line_no, record, error in rows:
        if error is None:
            try:
                question = _question_from_record(record)
            except ValueError as exc:
                error = str(exc)
        if error is not None:
            problems.append((line_no, error))
            continue
        if question.id in seen_ids:
            problems.append(
                (line_no, f"duplicate id {question.id!r} (first on line {seen_ids[question.id]})")
            )
            continue
        seen_ids[question.id] = line_no
        questions.append(question)
    if problems:
        raise QuestionFileError(path, problems)
    if not questions:
        raise QuestionFileError(path, [(0, "the file holds no questions")])
    return questions


def save_questions(questions: list[Question], path: str | Path) -> None:
    """Write questions as generic JSONL (1-based pages), readable by load_questions."""
    with open(path, "w", encoding="utf-8") as out:
        for q in questions:
            record = {
                "id": q.id,
                "question": q.question,
                "answer": q.answer,
                "entity": q.entity,
                "evidence": [
                    {k: v for k, v in vars(e).items() if v not in (None, [])} for e in q.evidence
                ],
            }
            if q.golden_chunk_ids:
                record["golden_chunk_ids"] = q.golden_chunk_ids
            if q.meta:
                record["meta"] = q.meta
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


def split_by_entity(
    questions: list[Question], val_fraction: float = 0.25, seed: int = 0
) -> tuple[list[Question], list[Question]]:
    """Split into (train, val) so that no entity has questions on both sides.

    Deterministic for a given seed. Questions without an entity each count as their own
    entity. Whole entities go to validation until it holds at least `val_fraction` of the
    questions (while train keeps at least one entity).
    """
    groups: dict[str, list[Question]] = {}
    for q in questions:
        groups.setdefault(entity_key(q), []).append(q)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    target = val_fraction * len(questions)
    val_keys: set[str] = set()
    taken = 0
    for key in keys[: max(len(keys) - 1, 0)]:
        if taken >= target:
            break
        val_keys.add(key)
        taken += len(groups[key])
    train = [q for q in questions if entity_key(q) not in val_keys]
    val = [q for q in questions if entity_key(q) in val_keys]
    return train, val


def entity_key(q: Question) -> str:
    """The unit a split keeps whole (here and in `evaluation.folds`): the question's entity,
    or the question itself when it names none."""
    return f"entity:{q.entity}" if q.entity else f"question:{q.id}"


def _jsonl_records(text: str):
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            yield line_no, None, f"not valid JSON ({exc.msg} at column {exc.colno})"
            continue
        except RecursionError:
            yield line_no, None, "the JSON is nested too deeply"
            continue
        except ValueError:  # Python converts no integer longer than this to int
            limit = sys.get_int_max_str_digits()
            yield line_no, None, f"a number is longer than {limit:,} digits"
            continue
        if not isinstance(record, dict):
            yield line_no, None, "expected a JSON object"
            continue
        yield line_no, record, None


def _csv_records(text: str):
    reader = csv.DictReader(text.splitlines())
    try:
        columns = {c.strip().lower() for c in reader.fieldnames or []}
    except csv.Error as exc:
        yield 1, None, _csv_problem(exc)
        return
    missing = {"question", "answer"} - columns
    if missing:
        yield 1, None, f"the header needs columns {sorted(missing)} (found {sorted(columns)})"
        return
    rows = iter(reader)
    while True:
        try:
            row = next(rows)
        except StopIteration:
            return
        except csv.Error as exc:  # the reader cannot go on past it
            # line_num counts the lines read before the one it failed on
            yield reader.line_num + 1, None, _csv_problem(exc)
            return
        if None in row:  # DictReader keeps the surplus cells under None
            yield reader.line_num, None, f"{len(row[None])} more fields than the header has"
            continue
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items()}
        record: dict = {k: row[k] for k in ("id", "question", "answer", "entity") if row.get(k)}
        if row.get("evidence"):
            evidence = {"text": row["evidence"]}
            if row.get("evidence_doc"):
                evidence["doc"] = row["evidence_doc"]
            if row.get("evidence_page"):
                evidence["page"] = row["evidence_page"]
            record["evidence"] = [evidence]
        yield reader.line_num, record, None


def _csv_problem(error: csv.Error) -> str:
    if "field larger than field limit" in str(error):
        return (
            f"a cell is longer than {csv.field_size_limit():,} characters; "
            "keep questions, answers and evidence shorter"
        )
    return f"not valid CSV ({error})"


# Ids and entities are names, stored as such; longer ones are refused, not cut.
MAX_NAME_LENGTH = 200


def _text_problem(record: dict) -> str | None:
    """What makes the record's text unstorable: NUL characters or lone surrogates."""
    stack = [record]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, str):
            if "\x00" in value:
                return "the text holds NUL characters; remove them"
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return "the text is not valid Unicode (a lone surrogate escape such as \\ud800)"
    return None


def _string_list(value, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, (str, int)) for v in value):
        raise ValueError(f"{what} must be a list of ids")
    return [str(v) for v in value]


def _question_from_record(record: dict) -> Question:
    """Build a Question from one record; raise ValueError saying what is wrong with it."""
    financebench = "company" in record and "entity" not in record
    problems = []
    text_problem = _text_problem(record)
    if text_problem:
        raise ValueError(text_problem)
    if record.get("meta") is not None and not isinstance(record.get("meta"), dict):
        problems.append("meta must be an object")
    try:
        golden_chunk_ids = _string_list(record.get("golden_chunk_ids"), "golden_chunk_ids")
    except ValueError as exc:
        problems.append(str(exc))
    qid = record.get("id")
    if qid is not None and not isinstance(qid, (str, int)):
        problems.append("the id must be text or a number")
    elif len(str(qid or "")) > MAX_NAME_LENGTH:
        problems.append(f"the id is longer than {MAX_NAME_LENGTH} characters")
    question = record.get("question")
    answer = record.get("answer")
    if not isinstance(question, str) or not question.strip():
        problems.append("no question text")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        problems.append("no answer")
    elif not isinstance(answer, (str, int, float)):
        problems.append("the answer must be text")
    entity = record.get("company") if financebench else record.get("entity")
    if entity is not None and not isinstance(entity, str):
        problems.append("the entity must be text")
    elif entity is not None and len(entity.strip()) > MAX_NAME_LENGTH:
        problems.append(f"the entity is longer than {MAX_NAME_LENGTH} characters")
    evidence = []
    raw_evidence = record.get("evidence") or []
    if isinstance(raw_evidence, (str, dict)):
        raw_evidence = [raw_evidence]
    if not isinstance(raw_evidence, list):
        problems.append("evidence must be a list of {text, doc?, page?}")
        raw_evidence = []
    for i, item in enumerate(raw_evidence, start=1):
        try:
            evidence.append(_evidence(item, zero_based=financebench))
        except ValueError as exc:
            problems.append(f"evidence {i}: {exc}")
    if problems:
        raise ValueError("; ".join(problems))
    return Question(
        id=str(qid) if qid not in (None, "") else question_id(question),
        question=question.strip(),
        answer=str(answer).strip(),
        entity=entity.strip() if isinstance(entity, str) and entity.strip() else None,
        evidence=evidence,
        golden_chunk_ids=golden_chunk_ids,
        meta={k: record[k] for k in ("question_type", "reasoning", "doc") if k in record}
        | (record.get("meta") or {}),
    )


def _evidence(item, zero_based: bool) -> Evidence:
    if isinstance(item, str):
        item = {"text": item}
    if not isinstance(item, dict):
        raise ValueError("expected {text, doc?, page?}")
    text = item.get("text")
    if not isinstance(text, str) or not text.strip():
        raise ValueError("no text")
    page = item.get("page")
    if page is not None and page != "":
        try:
            page = int(page)
        except (TypeError, ValueError, OverflowError):  # OverflowError: Infinity, 1e999
            raise ValueError(f"page {page!r} is not a number") from None
        page = page + 1 if zero_based else page
        if page < 1:
            raise ValueError(f"page {page} is before the first page")
    else:
        page = None
    doc = item.get("doc")
    chunk_ids = _string_list(item.get("chunk_ids"), "chunk_ids")
    return Evidence(text=text, doc=str(doc) if doc else None, page=page, chunk_ids=chunk_ids)
