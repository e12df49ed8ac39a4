"""What a file really is, judged from its first bytes rather than its name or the browser's word."""

import io
import json
import zipfile

from .models import Document

_TEXT_SAMPLE = 64 * 1024
_MARKDOWN_SUFFIXES = (".md", ".markdown")


class UnsupportedFile(ValueError):
    """A file whose content is none of the kinds Sleuth can read."""


CONTENT_TYPES = {
    Document.Kind.PDF: "application/pdf",
    Document.Kind.DOCX: "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    Document.Kind.HTML: "text/html",
    Document.Kind.MARKDOWN: "text/markdown",
    Document.Kind.TEXT: "text/plain",
    Document.Kind.PAGES_JSONL: "application/jsonl",
}


def sniff_kind(*, name: str, file: io.IOBase) -> str:
    """Return the Document.Kind of `file`; raise UnsupportedFile saying what is accepted."""
    file.seek(0)
    head = file.read(_TEXT_SAMPLE)
    file.seek(0)
    if head.startswith(b"%PDF-"):
        return Document.Kind.PDF
    if head.startswith(b"PK\x03\x04"):
        if _is_docx(file):
            return Document.Kind.DOCX
        raise UnsupportedFile(f"{name} is a zip archive but not a Word (.docx) document.")
    text = _as_text(head)
    if text is None:
        raise UnsupportedFile(
            f"{name} is not a file type Sleuth reads. Upload PDF, Word (.docx), HTML, "
            "Markdown, plain text, or JSONL pages."
        )
    stripped = text.lstrip().lower()
    if stripped.startswith(("<!doctype html", "<html")) or "<body" in stripped[:4096]:
        return Document.Kind.HTML
    if stripped.startswith("{") and _is_pages_jsonl(text):
        return Document.Kind.PAGES_JSONL
    if name.lower().endswith(_MARKDOWN_SUFFIXES):
        return Document.Kind.MARKDOWN
    return Document.Kind.TEXT


def _is_docx(file) -> bool:
    try:
        with zipfile.ZipFile(file) as archive:
            return "word/document.xml" in archive.namelist()
    except zipfile.BadZipFile:
        return False
    finally:
        file.seek(0)


def _as_text(head: bytes) -> str | None:
    if b"\x00" in head:
        return None
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        # The sample may end in the middle of a multi-byte character.
        if error.start >= len(head) - 3:
            return head[: error.start].decode("utf-8-sig")
        return None


def _is_pages_jsonl(text: str) -> bool:
    """Pre-extracted pages: one JSON object per line with at least a `text` field."""
    first_line = text.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first_line)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and "text" in record
