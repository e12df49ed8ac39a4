"""From what a customer hands over (document files, folders, JSONL of pre-extracted
pages) to chunks: each input becomes sections, then chunks, with its entity.

A document that cannot be read is reported in `CorpusResult.errors` and the rest go
through.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from engine.documents.chunking import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_OVERLAP_TOKENS,
    Chunk,
    Section,
    chunk_sections,
)

# Words that start the descriptive part of a file name ("3M_2018_10K" -> entity "3M").
_PERIOD_OR_FORM = re.compile(
    r"^(?:(?:19|20)\d\d.*|fy\d+.*|q[1-4].*|10-?[kq].*|8-?k.*|20-?f.*|annual|quarterly|"
    r"earnings|report|filing|dated.*)$",
    re.IGNORECASE,
)


@dataclass
class DocumentError:
    doc: str
    message: str


@dataclass
class CorpusResult:
    chunks: list[Chunk] = field(default_factory=list)
    errors: list[DocumentError] = field(default_factory=list)
    documents: int = 0


def infer_entity(doc_name: str) -> str | None:
    """Guess the entity from a file name: the words before its first year, period or form
    type ("AMCOR_2023Q4_EARNINGS" -> "AMCOR", "Foot Locker 10-K 2022.pdf" -> "Foot Locker",
    "guide-2024.md" -> "guide"); a name that opens with one is its own entity
    ("2024-handbook.md"). Only a suffix with a letter is an extension: "GPL-2.0" is a
    version, and "GPL-2.1" another document."""
    path = Path(doc_name)
    stem = path.stem if re.search(r"[A-Za-z]", path.suffix) else path.name
    # Hyphens join words ("charset-normalizer"), and a year to a name ("guide-2024"); a
    # hyphen after a digit is part of a form or version ("10-K", "2.0-beta").
    words = [w for w in re.split(r"[_\s]+|(?<=\D)-(?=\D|(?:19|20)\d\d\b)", stem) if w]
    head: list[str] = []
    for w in words:
        if _PERIOD_OR_FORM.match(w):
            break
        head.append(w)
    return " ".join(head or words) or None


def read_pages_jsonl(path: str | Path) -> dict[str, tuple[str | None, list[Section]]]:
    """JSONL of pre-extracted pages `{"doc", "page", "text", "company" or "entity"}`
    (optionally gzipped) -> {doc: (entity, sections in page order)}."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    docs: dict[str, tuple[str | None, list[Section]]] = {}
    problems = []
    with opener(path, "rt", encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                doc, text = str(record["doc"]), record["text"]
                page = record.get("page")
                page = int(page) if page not in (None, "") else None
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                problems.append(f"line {line_no}: {type(exc).__name__}: {exc}")
                continue
            entity = record.get("entity") or record.get("company")
            known = docs.setdefault(doc, (entity, []))
            known[1].append(Section(text=text or "", page=page))
    if problems:
        raise ValueError(
            f"{path}: bad page lines ({len(problems)}):\n  " + "\n  ".join(problems[:20])
        )
    for _, sections in docs.values():
        sections.sort(key=lambda s: (s.page is None, s.page or 0))
    return docs


def is_pages_jsonl(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith(".jsonl") or name.endswith(".jsonl.gz")


def build_corpus(
    inputs: Iterable[str | Path],
    max_tokens: int = DEFAULT_MAX_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
    entities: dict[str, str] | None = None,
    progress: bool = False,
) -> CorpusResult:
    """Chunks from document files, folders (searched recursively) and pages JSONL.

    `entities` maps a document name (or file name) to its entity, overriding what the
    input says or the file name suggests.
    """
    entities = entities or {}
    result = CorpusResult()
    files: list[Path] = []
    for item in inputs:
        path = Path(item)
        if not path.exists():
            result.errors.append(DocumentError(str(path), "no such file or folder"))
        elif path.is_dir():
            files.extend(
                p for p in sorted(path.rglob("*")) if p.is_file() and not p.name.startswith(".")
            )
        else:
            files.append(path)

    documents: list[tuple[str, str | None, list[Section]]] = []
    to_parse = []
    for path in files:
        if is_pages_jsonl(path):
            try:
                for doc, (entity, sections) in read_pages_jsonl(path).items():
                    documents.append((doc, entity, sections))
            except (OSError, ValueError) as exc:
                result.errors.append(DocumentError(str(path), str(exc)))
        else:
            to_parse.append(path)
    if to_parse:
        from engine.documents.sandbox import parse_files

        for parsed in parse_files(to_parse, progress=progress):
            if parsed.error:
                result.errors.append(DocumentError(parsed.doc, parsed.error))
            else:
                documents.append((parsed.doc, None, parsed.sections))

    seen: set[str] = set()
    for doc, entity, sections in tqdm(
        documents, desc="chunking", unit="doc", disable=not progress, file=sys.stderr
    ):
        if doc in seen:
            result.errors.append(DocumentError(doc, "a document with this name was already added"))
            continue
        seen.add(doc)
        entity = entities.get(doc) or entities.get(Path(doc).stem) or entity or infer_entity(doc)
        result.chunks.extend(chunk_sections(doc, sections, entity, max_tokens, overlap_tokens))
        result.documents += 1
    return result
