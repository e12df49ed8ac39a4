"""Reading an uploaded question file (JSONL or CSV) with the engine's loader.

The file is validated as a whole: every bad line is reported with its line number and
nothing is returned unless every line is good. The web side and the CLI share the one
loader, `engine.documents.questions.load_questions`, so they accept the same files.
"""

from dataclasses import dataclass, field
from pathlib import Path

from engine.documents.questions import QuestionFileError, load_questions

__all__ = ["ParsedQuestion", "QuestionFileError", "validate_question_file"]


@dataclass
class ParsedQuestion:
    position: int
    question: str
    answer: str
    entity: str = ""
    external_id: str = ""
    evidence: list[dict] = field(default_factory=list)


def validate_question_file(path: Path) -> list[ParsedQuestion]:
    """Every question in the file, or QuestionFileError whose `problems` list every bad line."""
    try:
        questions = load_questions(path)
    except UnicodeDecodeError:
        raise QuestionFileError(path, [(0, "the file is not UTF-8 text")]) from None
    return [
        ParsedQuestion(
            position=position,
            question=q.question,
            answer=q.answer,
            entity=q.entity or "",
            external_id=q.id,
            evidence=[{"text": e.text, "doc": e.doc, "page": e.page} for e in q.evidence],
        )
        for position, q in enumerate(questions, start=1)
    ]
