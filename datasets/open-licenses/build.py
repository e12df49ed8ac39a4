"""Regenerate pages.jsonl.gz from the license texts in texts/ (verbatim copies of Debian's
/usr/share/common-licenses, base-files 12.4+deb12u11).

    python datasets/open-licenses/build.py

One document per license text (`doc` = its file name without ".txt": "GPL-3", "MPL-2.0"),
its paragraphs joined into pages of about 2,000 characters, cut at paragraph boundaries. The
entity is the license's family ("GPL" holds GPL-1, GPL-2 and GPL-3): versions of one license
share whole paragraphs, as a company's yearly filings do, so a fold that held out GPL-3 and
trained on GPL-2 would have trained on much of its text. A question names the version it asks
about, and the right document is part of what the agent has to find.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

PAGE_CHARS = 2000  # about a printed page; a page ends at a paragraph boundary
HERE = Path(__file__).resolve().parent


def family(doc: str) -> str:
    """ "GPL-3" → "GPL", "LGPL-2.1" → "LGPL", "Artistic" → "Artistic"."""
    return re.sub(r"-[\d.]+$", "", doc)


def paragraphs(text: str) -> list[str]:
    # Blank lines (a form feed alone on a line counts as blank) separate paragraphs.
    parts = re.split(r"\n[ \t\f]*\n", text)
    return [p.strip("\n\f") for p in parts if p.strip(" \t\n\f")]


def pages(paras: list[str]) -> list[str]:
    """Paragraphs joined into pages of about PAGE_CHARS characters."""
    out, current = [], ""
    for p in paras:
        if current and len(current) + len(p) + 2 > PAGE_CHARS:
            out.append(current)
            current = ""
        current = f"{current}\n\n{p}" if current else p
    if current:
        out.append(current)
    return out


def main(texts: Path = HERE / "texts", out: Path = HERE / "pages.jsonl.gz") -> None:
    lines = []
    for path in sorted(texts.glob("*.txt")):
        doc = path.name.removesuffix(".txt")
        text = path.read_text(encoding="utf-8")
        for number, page in enumerate(pages(paragraphs(text)), start=1):
            record = {"doc": doc, "entity": family(doc), "page": number, "text": page}
            lines.append(json.dumps(record, ensure_ascii=False))
    # No file name or time in the gzip header: the same input gives the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{len(lines)} pages -> {out}")


if __name__ == "__main__":
    main()
