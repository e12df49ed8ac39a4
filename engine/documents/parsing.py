"""Parsing documents into sections: PDF (one section per page), HTML, Markdown and DOCX
(one section per heading), plain text.

The type is judged by content, not by extension, and every failure becomes a clear
per-document error. This module parses in the calling process; untrusted files go
through `engine.documents.sandbox.parse_files`, which adds the time and memory guard.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from engine.documents.chunking import Section, clean_text

MAGIC = [  # binary formats we recognise only to name them in the error
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"II*\x00", "a TIFF image"),
    (b"MM\x00*", "a TIFF image"),
    (b"\xd0\xcf\x11\xe0", "an old Office file (.doc/.xls); save it as .docx or PDF"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"Rar!", "a RAR archive"),
    (b"7z\xbc\xaf", "a 7-Zip archive"),
]
_HTML = re.compile(rb"<\s*(!doctype\s+html|html|head|body|div|p|article|table)\b", re.IGNORECASE)
_MD_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass
class ParseLimits:
    max_bytes: int = 200 * 1024 * 1024
    max_pages: int = 5000
    timeout_s: float = 300.0
    memory_mb: int = 4096


@dataclass
class ParsedDocument:
    doc: str
    sections: list[Section] = field(default_factory=list)
    kind: str | None = None
    error: str | None = None


class ParseError(Exception):
    """A document that cannot be read; the message tells the customer why and what to do."""


def sniff_kind(data: bytes, name: str = "") -> str:
    """ "pdf", "docx", "html", "markdown" or "text" from the bytes; ParseError otherwise."""
    head = data[:2048]
    if b"%PDF-" in data[:1024]:
        return "pdf"
    if head.startswith(b"PK\x03\x04"):
        try:
            names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
        except zipfile.BadZipFile:
            raise ParseError("a damaged ZIP file (is it a corrupt .docx?)") from None
        if "word/document.xml" in names:
            return "docx"
        raise ParseError("a ZIP archive, not a document: unpack it and upload the files")
    for magic, what in MAGIC:
        if head.startswith(magic):
            raise ParseError(f"unsupported type: {what}")
    if not data.strip():
        raise ParseError("the file is empty")
    if Path(name).suffix.lower() == ".pdf":  # no %PDF- header above
        raise ParseError("named .pdf but not a PDF (no PDF header): a damaged or renamed file?")
    if b"\x00" in data[:8192]:
        raise ParseError("unsupported type: binary data, not a document")
    if _HTML.search(data[:4096]):
        return "html"
    suffix = Path(name).suffix.lower()
    if suffix in (".md", ".markdown") or re.search(rb"(?m)^#{1,6} \S", data[:8192]):
        return "markdown"
    return "text"


def parse_bytes(data: bytes, name: str, limits: ParseLimits | None = None) -> ParsedDocument:
    """Parse in this process (no time or memory guard: see parse_files for untrusted files)."""
    limits = limits or ParseLimits()
    try:
        if len(data) > limits.max_bytes:
            raise ParseError(
                f"too large ({len(data) / 1e6:.0f} MB; limit {limits.max_bytes / 1e6:.0f} MB)"
            )
        kind = sniff_kind(data, name)
        if kind == "pdf":
            sections = _parse_pdf(data, limits.max_pages)
        elif kind == "docx":
            sections = _parse_docx(data, limits.max_bytes)
        else:
            text = _decode(data)
            sections = {"html": _parse_html, "markdown": _parse_markdown, "text": _parse_text}[
                kind
            ](text)
        # NUL and other control characters past the sniffed head, broken PDF text layers:
        # cleaned here, once, so no stored section, chunk or sample carries them.
        sections = [
            Section(
                text=clean_text(s.text),
                page=s.page,
                title=clean_text(s.title) if s.title else s.title,
            )
            for s in sections
        ]
        if not any(s.text.strip() for s in sections):
            raise ParseError("no text found in the document")
        return ParsedDocument(doc=name, sections=sections, kind=kind)
    except ParseError as exc:
        return ParsedDocument(doc=name, error=str(exc))


def _decode(data: bytes) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        from charset_normalizer import from_bytes

        best = from_bytes(data).best()
        if best is None:
            raise ParseError("unsupported type: not text in any known encoding") from None
        return str(best)


def _parse_pdf(data: bytes, max_pages: int) -> list[Section]:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ParseError("password-protected PDF: upload a copy without a password") from None
        raise ParseError(f"not a readable PDF (damaged or truncated): {exc}") from None
    try:
        if len(pdf) > max_pages:
            raise ParseError(f"too many pages ({len(pdf)}; limit {max_pages})")
        sections = []
        for number in range(len(pdf)):
            page = pdf[number]
            textpage = page.get_textpage()
            sections.append(Section(text=textpage.get_text_range(), page=number + 1))
            textpage.close()
            page.close()
    finally:
        pdf.close()
    if not any(s.text.strip() for s in sections):
        raise ParseError("no text layer (a scanned PDF?): run OCR on it first, then upload it")
    return sections


def _parse_html(text: str) -> list[Section]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(text, "lxml")
    for tag in soup(
        [
            "script",
            "style",
            "noscript",
            "template",
            "svg",
            "nav",
            "header",
            "footer",
            "aside",
            "form",
            "iframe",
        ]
    ):
        tag.decompose()
    for tag in soup.select('[role="navigation"], [role="banner"], [role="contentinfo"]'):
        tag.decompose()
    root = soup.find("main") or soup.find("article") or soup.body or soup
    for row in root.find_all("tr"):
        cells = [" ".join(c.get_text(" ").split()) for c in row.find_all(["td", "th"])]
        row.replace_with(soup.new_string("\n" + " | ".join(cells) + "\n"))
    marker = "\x00heading\x00"
    for heading in root.find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        heading.replace_with(
            soup.new_string(f"\n{marker}{' '.join(heading.get_text(' ').split())}\n")
        )
    for block in root.find_all(["p", "div", "li", "br", "section", "pre", "blockquote"]):
        block.insert_before("\n")
        block.insert_after("\n")
    return _split_on_headings(
        root.get_text(), lambda line: line[len(marker) :] if line.startswith(marker) else None
    )


# A setext heading's underline ("Dependencies" over "------------"), as Markdown and
# reStructuredText (which many READMEs are) both write one.
_UNDERLINE = re.compile(r"^ {0,3}(?:=+|-+)[ \t]*$")


def _setext_as_atx(text: str) -> str:
    """The text with each underlined heading written as "# Heading", outside code fences: a
    line of text over a line of = or - alone (three or more). The rule after a blank line,
    and a list item's line, stay as they are."""
    lines = text.splitlines()
    out: list[str] = []
    in_fence = False
    underline = -1
    for i, line in enumerate(lines):
        if i == underline:
            continue
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        following = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            not in_fence
            and line.strip()
            and not line.startswith((" " * 4, "\t"))
            and not re.match(r"\s*(?:[-*+]|\d+[.)])\s", line)
            and len(following.strip()) >= 3
            and _UNDERLINE.match(following)
        ):
            out.append(f"# {line.strip()}")
            underline = i + 1
            continue
        out.append(line)
    return "\n".join(out)


def _parse_markdown(text: str) -> list[Section]:
    text = _setext_as_atx(text)
    in_fence = False

    def title(line: str) -> str | None:
        nonlocal in_fence
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        if in_fence:
            return None
        match = _MD_HEADING.match(line)
        return match.group(2) if match else None

    return _split_on_headings(text, title)


def _split_on_headings(text: str, heading_of) -> list[Section]:
    """One section per heading (the heading line stays in its text, it is searchable)."""
    sections: list[Section] = []
    title, lines = None, []
    for raw in text.splitlines():
        line = raw.rstrip()
        heading = heading_of(line)
        if heading is not None:
            if any(x.strip() for x in lines):
                sections.append(Section(text="\n".join(lines).strip(), title=title))
            title, lines = heading, [heading]
        else:
            lines.append(line)
    if any(x.strip() for x in lines):
        sections.append(Section(text="\n".join(lines).strip(), title=title))
    return [s for s in sections if s.text]


def _parse_text(text: str) -> list[Section]:
    # Form feeds separate pages in text dumps (pdftotext): keep them as page numbers.
    pages = text.split("\f")
    if len(pages) > 1:
        return [Section(text=p, page=i) for i, p in enumerate(pages, start=1) if p.strip()]
    return [Section(text=text)]


def _parse_docx(data: bytes, max_unpacked_bytes: int) -> list[Section]:
    import docx
    from docx.table import Table, _Cell

    # A zip bomb (a small DOCX whose XML unpacks a thousand times larger) is refused before
    # anything is unpacked. The sizes a ZIP declares bound what zipfile gives: it stops at a
    # part's declared size (and then fails its CRC).
    unpacked = sum(info.file_size for info in zipfile.ZipFile(io.BytesIO(data)).infolist())
    if unpacked > max_unpacked_bytes:
        raise ParseError(
            f"the DOCX unpacks to {unpacked / 1e6:.0f} MB (limit {max_unpacked_bytes / 1e6:.0f} "
            "MB): split it into smaller documents"
        )
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # python-docx raises several types for broken packages
        raise ParseError(f"not a readable DOCX (damaged?): {exc}") from None
    blocks: list[str] = []
    marker = "\x00heading\x00"
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            # Each cell as written, once: `row.cells` repeats a merged cell once per column
            # and row it spans, a million times for a cell that says it spans a million.
            for row in item.rows:
                cells = (_Cell(tc, item) for tc in row._tr.tc_lst)
                blocks.append(" | ".join(" ".join(c.text.split()) for c in cells))
        elif item.style is not None and (item.style.name or "").lower().startswith(
            ("heading", "title")
        ):
            blocks.append(marker + item.text.strip())
        else:
            blocks.append(item.text)
    return _split_on_headings(
        "\n".join(blocks), lambda line: line[len(marker) :] if line.startswith(marker) else None
    )
