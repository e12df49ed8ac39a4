"""Reading and validating an uploaded question file (JSONL or CSV) as a whole.

Every bad line is reported with its line number, and nothing is returned unless every
line is good. `validate_question_file` is the one function the import calls, so it can
move to the engine's `workers.documents.questions.load_questions` without touching the rest.
"""

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ParsedQuestion:
    line: int
    question: str
    answer: str
    entity: str = ""
    external_id: str = ""
    evidence: list[dict] = field(default_factory=list)


class QuestionFileError(ValueError):
    """A question file with bad lines; `problems` lists (line number, what is wrong)."""

    def __init__(self, problems: list[tuple[int, str]]):
        self.problems = problems
        super().__init__("; ".join(f"line {n}: {message}" for n, message in problems))


def validate_question_file(path: Path) -> list[ParsedQuestion]:
    """Every question in the file, or QuestionFileError listing every bad line."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise QuestionFileError([(0, "the file is not UTF-8 text")]) from None
    rows = _csv_rows(text) if path.suffix.lower() == ".csv" else _jsonl_rows(text)
    questions, problems, seen = [], [], {}
    for line, record, error in rows:
        if error is None:
            try:
                question = _question(line, record)
            except ValueError as invalid:
                error = str(invalid)
        if error is not None:
            problems.append((line, error))
            continue
        key = question.external_id or question.question.strip().lower()
        if key in seen:
            problems.append((line, f"the same question as line {seen[key]}"))
            continue
        seen[key] = line
        questions.append(question)
    if problems:
        raise QuestionFileError(problems)
    if not questions:
        raise QuestionFileError([(0, "the file holds no questions")])
    return questions


def _jsonl_rows(text: str):
    for line, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except json.JSONDecodeError as error:
            yield line, None, f"not valid JSON ({error.msg} at column {error.colno})"
            continue
        if not isinstance(record, dict):
            yield line, None, "expected a JSON object with question and answer"
            continue
        yield line, record, None


def _csv_rows(text: str):
    reader = csv.DictReader(text.splitlines())
    columns = {(c or "").strip().lower() for c in reader.fieldnames or []}
    missing = sorted({"question", "answer"} - columns)
    if missing:
        yield 1, None, f"the header row needs the column(s) {', '.join(missing)}"
        return
    for row in reader:
        row = {(k or "").strip().lower(): (v or "").strip() for k, v in row.items() if k}
        if row.get("evidence"):
            row["evidence"] = [
                {
                    "text": row["evidence"],
                    "doc": row.get("evidence_doc") or None,
                    "page": row.get("evidence_page") or None,
                }
            ]
        yield reader.line_num, row, None


def _question(line: int, record: dict) -> ParsedQuestion:
    problems = []
    question, answer = record.get("question"), record.get("answer")
    if not isinstance(question, str) or not question.strip():
        problems.append("the question is missing")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    if not isinstance(answer, str) or not answer.strip():
        problems.append("the answer is missing")
    # FinanceBench files name the entity "company" and count evidence pages from 0.
    financebench = "company" in record and "entity" not in record
    entity = record.get("entity", record.get("company")) or ""
    if not isinstance(entity, str):
        problems.append("the entity must be text")
    evidence = record.get("evidence") or []
    if isinstance(evidence, (str, dict)):
        evidence = [evidence]
    cleaned_evidence = []
    if not isinstance(evidence, list):
        problems.append("evidence must be text, an object with text, or a list of those")
    else:
        for item in evidence:
            if isinstance(item, str):
                item = {"text": item}
            if not isinstance(item, dict) or not isinstance(item.get("text"), str):
                problems.append("each evidence item needs its text")
                break
            page = item.get("page")
            if page in (None, ""):
                page = None
            else:
                try:
                    page = int(page) + (1 if financebench else 0)
                except (TypeError, ValueError):
                    problems.append(f"evidence page {page!r} is not a number")
                    break
            cleaned_evidence.append({"text": item["text"], "doc": item.get("doc"), "page": page})
    if problems:
        raise ValueError("; ".join(problems))
    return ParsedQuestion(
        line=line,
        question=question.strip(),
        answer=answer.strip(),
        entity=entity.strip(),
        external_id=str(record.get("id") or ""),
        evidence=cleaned_evidence,
    )
