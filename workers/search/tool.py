"""The search tool as the agent sees it: hits formatted as the text inside
`<results>…</results>`, each with its chunk id, document, page and text.

A hit longer than its share of the result budget shows its lines that hold the most of the
query's words (`excerpt`), not only its first ones: a statement's page is a hundred rows, and
the row a question asks for is rarely among the first few that fit. Its first line comes
first, then the line holding the most of the query's words, then the lines that say how to read
that line's figures (`key_lines`: the nearest row of column years above it and the table's
unit), then the other lines by the number of the query's words they hold, then the rest in
order; they are shown in the page's order, "…" where lines were left out. Without its years
and unit, "Capital spending (4,625) (4,240) (4,232)" is three figures of no known year or size.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from workers.search.index import YEAR, SearchHit, split_scope, tokenize

NO_RESULTS = "No results. Try other words: the documents may name it differently."
HIT_SEPARATOR = "\n\n"
GAP = "…"


def format_hit(hit: SearchHit, max_chars: int | None = None, text: str | None = None) -> str:
    """One hit: `[chunk id] doc | page N`, then its text (or `text`, an excerpt of it; cut to
    max_chars)."""
    text = hit.text if text is None else text
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rstrip() + " …"
    page = f" | page {hit.page}" if hit.page is not None else ""
    return f"[{hit.chunk_id}] {hit.doc}{page}\n{text}"


def excerpt(text: str, query: str, fits: Callable[[str], bool]) -> str:
    """The lines of `text` worth showing for `query`, as many as `fits` accepts (see the
    module's note); `text` itself when no line fits."""
    lines = text.split("\n")
    wanted = set(tokenize(split_scope(query)[1]))
    held = [len(wanted.intersection(tokenize(line))) for line in lines]
    ranked = sorted(range(1, len(lines)), key=lambda i: (-held[i], i))
    best = ranked[:1] if ranked and held[ranked[0]] else []
    order = dict.fromkeys([0, *best, *key_lines(lines, *best), *ranked])
    chosen: list[int] = []
    for i in order:
        trial = sorted([*chosen, i])
        if fits(_joined(lines, trial)):
            chosen = trial
    return _joined(lines, chosen) if chosen else text


# A table's unit as a page states it: "(in millions)", "in thousands, except per share".
UNIT_LINE = re.compile(
    r"\bin (?:millions|thousands|billions)\b|\((?:millions|thousands|billions)\)", re.I
)
KEY_LINE_WORDS = 12  # longer lines are prose that happens to say "in millions"


def key_lines(lines: list[str], row: int | None = None) -> list[int]:
    """The lines that say how to read the figures of line `row`: the nearest header of
    column years above it ("2021 2020 2019", at most six other words) and the nearest
    statement of a unit ("(in millions)"), above it or else anywhere; none without a row."""
    if row is None:
        return []
    short = [i for i, line in enumerate(lines) if len(line.split()) <= KEY_LINE_WORDS]
    headers = [
        i
        for i in short[::-1]
        if i < row and len(YEAR.findall(lines[i])) >= 2 and len(YEAR.sub("", lines[i]).split()) <= 6
    ]
    units = [i for i in short if UNIT_LINE.search(lines[i])]
    unit = [i for i in units if i < row][-1:] or units[:1]
    return [*headers[:1], *unit]


def _joined(lines: list[str], chosen: list[int]) -> str:
    parts: list[str] = []
    for before, i in zip([-1, *chosen], chosen, strict=False):
        if i != before + 1:
            parts.append(GAP)
        parts.append(lines[i])
    if chosen and chosen[-1] != len(lines) - 1:
        parts.append(GAP)
    return "\n".join(parts)


def format_hits_for_model(hits: list[SearchHit], max_chars_per_hit: int | None = None) -> str:
    if not hits:
        return NO_RESULTS
    return HIT_SEPARATOR.join(format_hit(hit, max_chars_per_hit) for hit in hits)
