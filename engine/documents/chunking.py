"""Chunking: pages (or sections) of text into overlapping, token-bounded chunks.

Chunks never cross a page, so every search hit can cite its page. Sizes are counted in
approximate tokens (words and punctuation marks), which tracks model tokens well enough
to keep search results within the agent's context budget. Lines are kept whole where
possible so table rows stay on one line, and the number cells that PDF extraction puts
on lines of their own are joined back onto their row label first.

Chunk ids are derived from the document name, page and position only, so the same
input always gives the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# Defaults tuned on the FinanceBench filings (see README: chunk size vs. echo recall).
DEFAULT_MAX_TOKENS = 384
DEFAULT_OVERLAP_TOKENS = 64

_TOKEN = re.compile(r"\w+|[^\w\s]")
# A line that is only a table cell: a number, a currency sign, a dash, a percentage...
_CELL = re.compile(r"^[\$€£¥(]*\s*[-–—]?\s*[\d.,]*\d[\d.,]*\s*[)%]*$|^[\$€£¥%)(—–-]+$")
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
# Control characters that are never text: NUL (Postgres refuses it in text and jsonb) and the
# other C0 controls but tab, newlines, vertical tab and form feed (a page break in text dumps)
# are dropped. Lone UTF-16 surrogates (from broken PDF text layers) cannot be encoded as UTF-8:
# they become U+FFFD. Replaced by str.translate, not re.sub: re.sub keeps an entry per match
# until it joins them, 8 bytes for each NUL of a hostile file (400 MB for 50 MB of NULs).
_DIRTY = re.compile("[\x00-\x08\x0e-\x1f\x7f\ud800-\udfff]")
_CLEAN = dict.fromkeys([*range(0x00, 0x09), *range(0x0E, 0x20), 0x7F]) | dict.fromkeys(
    range(0xD800, 0xE000), "\ufffd"
)


@dataclass
class Chunk:
    id: str
    doc: str
    page: int | None
    entity: str | None
    text: str
    section: str | None = None
    meta: dict = field(default_factory=dict)


@dataclass
class Section:
    """A unit of a parsed document that chunks must not cross: a PDF page, or a part of an
    HTML/Markdown/DOCX document under one heading."""

    text: str
    page: int | None = None
    title: str | None = None


def clean_text(text: str) -> str:
    """Extracted text as Postgres stores it (text and jsonb columns, JSON files): without NUL
    and other control characters, lone surrogates replaced by U+FFFD."""
    return text.translate(_CLEAN) if _DIRTY.search(text) else text


def count_tokens(text: str) -> int:
    return len(_TOKEN.findall(text))


def tidy_text(text: str) -> str:
    """Normalize extracted text: one row per line, number cells joined onto their row."""
    lines: list[str] = []
    for raw in text.splitlines():
        line = " ".join(raw.split())
        if not line:
            continue
        if lines and _CELL.match(line):
            lines[-1] = f"{lines[-1]} {line}"
        else:
            lines.append(line)
    # "$ 5,363" -> "$5,363": one cell reads as one value.
    return "\n".join(re.sub(r"([\$€£¥])\s+(?=[\d(])", r"\1", line) for line in lines)


def chunk_id(doc: str, page: int | None, position: int, section_index: int | None = None) -> str:
    where = f"p{page}" if page is not None else f"s{section_index or 0}"
    return f"{_ID_UNSAFE.sub('_', doc)}:{where}:c{position}"


def chunk_sections(
    doc: str,
    sections: Iterable[Section],
    entity: str | None = None,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    overlap_tokens: int = DEFAULT_OVERLAP_TOKENS,
) -> list[Chunk]:
    """Split a document's sections into chunks of at most ~max_tokens, overlapping by up
    to overlap_tokens of whole lines."""
    if max_tokens < 16 or not 0 <= overlap_tokens < max_tokens // 2:
        raise ValueError("need max_tokens >= 16 and 0 <= overlap_tokens < max_tokens / 2")
    chunks: list[Chunk] = []
    for index, section in enumerate(sections):
        # Cleaned again: sections parsed before parse_bytes cleaned them are still stored.
        lines = _bounded_lines(tidy_text(clean_text(section.text)), max_tokens)
        title = clean_text(section.title) if section.title else section.title
        for position, text in enumerate(_windows(lines, max_tokens, overlap_tokens)):
            chunks.append(
                Chunk(
                    id=chunk_id(doc, section.page, position, index),
                    doc=doc,
                    page=section.page,
                    entity=entity,
                    text=text,
                    section=title,
                )
            )
    return chunks


def _bounded_lines(text: str, max_tokens: int) -> list[tuple[str, int]]:
    """Lines with their token counts; a line longer than max_tokens is cut into pieces."""
    out = []
    for line in text.splitlines():
        n = count_tokens(line)
        if n <= max_tokens:
            out.append((line, n))
            continue
        words = line.split(" ")
        piece: list[str] = []
        size = 0
        for word in words:
            w = count_tokens(word)
            if piece and size + w > max_tokens:
                out.append((" ".join(piece), size))
                piece, size = [], 0
            piece.append(word)
            size += w
        if piece:
            out.append((" ".join(piece), size))
    return out


def _windows(lines: list[tuple[str, int]], max_tokens: int, overlap_tokens: int) -> list[str]:
    windows: list[str] = []
    start = 0
    while start < len(lines):
        end, size = start, 0
        while end < len(lines) and (end == start or size + lines[end][1] <= max_tokens):
            size += lines[end][1]
            end += 1
        windows.append("\n".join(line for line, _ in lines[start:end]))
        if end >= len(lines):
            break
        # Step back over whole lines worth at most overlap_tokens, always moving forward.
        back, kept = end, 0
        while back - 1 > start and kept + lines[back - 1][1] <= overlap_tokens:
            back -= 1
            kept += lines[back][1]
        start = back
    return windows
