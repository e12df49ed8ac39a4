"""Regenerate pages.jsonl.gz from the GNU manuals in texts/ (Debian 12's info files, copied
unchanged from /usr/share/info).

    python datasets/gnu-manuals/build.py

One document per manual (`doc` = the manual's name: "grep", "find"), which is also its entity:
a fold holds out whole tools. An info file is a run of nodes, each a section of the manual
headed by a line naming it ("File: grep.info,  Node: Usage,  Next: …"); a page is a node's text
without that line, or a part of a long node cut at paragraph boundaries into about 2,000
characters. The nodes that are no part of what the manual teaches are left out: the GNU Free
Documentation License each manual carries (texts/ keeps it, as the license asks; it is the
same text in every manual), the indexes (lists of page references) and the info file's own
tables.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

PAGE_CHARS = 2000  # about a printed page; a page ends at a paragraph boundary
HERE = Path(__file__).resolve().parent
NODE_HEADER = re.compile(r"^File: [^,]+,\s+Node: ([^,\n]+)[^\n]*\n", re.M)
LEFT_OUT = re.compile(r"GNU Free Documentation License|Copying This Manual|Index\b|^Copying$")


def manual_text(name: str, texts: Path) -> str:
    """A manual's info text; a manual split in parts ("find.info-1", "find.info-2") is read
    in order, its indirection table ("find.info") aside."""
    parts = sorted(texts.glob(f"{name}.info-*.gz")) or [texts / f"{name}.info.gz"]
    return "".join(gzip.open(part, "rt", encoding="utf-8").read() for part in parts)


def nodes(info: str) -> list[tuple[str, str]]:
    """(node name, text) for each node of an info text, in the file's order."""
    found = []
    for block in info.split("\x1f"):
        header = NODE_HEADER.search(block)
        if header:
            found.append((header.group(1).strip(), block[header.end() :].strip("\n")))
    return found


def paragraphs(text: str) -> list[str]:
    parts = re.split(r"\n[ \t]*\n", text)
    return [p.strip("\n") for p in parts if p.strip()]


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


def manuals(texts: Path) -> list[str]:
    names = {re.sub(r"\.info(-\d+)?\.gz$", "", p.name) for p in texts.glob("*.info*.gz")}
    return sorted(names)


def main(texts: Path = HERE / "texts", out: Path = HERE / "pages.jsonl.gz") -> None:
    lines = []
    for doc in manuals(texts):
        number = 0
        for name, text in nodes(manual_text(doc, texts)):
            if LEFT_OUT.search(name):
                continue
            for page in pages(paragraphs(text)):
                number += 1
                record = {"doc": doc, "entity": doc, "page": number, "text": page}
                lines.append(json.dumps(record, ensure_ascii=False))
    # No file name or time in the gzip header: the same input gives the same bytes.
    with open(out, "wb") as raw, gzip.GzipFile("", "wb", fileobj=raw, mtime=0) as f:
        f.write(("\n".join(lines) + "\n").encode("utf-8"))
    print(f"{len(lines)} pages -> {out}")


if __name__ == "__main__":
    main()
