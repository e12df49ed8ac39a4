"""The search tool as the agent sees it: hits formatted as the text inside
`<results>…</results>`, each with its chunk id, document, page and text.

A hit longer than its share of the result budget shows its lines that hold the most of the
query's words (`excerpt`), not only its first ones: a statement's page is a hundred rows, and
the row a question asks for is rarely among the first few that fit. Its first line (where a
page names its statement and units) comes first, then the lines by the number of the query's
words they hold, then the rest in order; they are shown in the page's order, "…" where lines
were left out.
"""

from __future__ import annotations

from collections.abc import Callable

from engine.search.index import SearchHit, split_scope, tokenize

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
    chosen: list[int] = []
    for i in sorted(range(len(lines)), key=lambda i: (i > 0, -held[i], i)):
        trial = sorted([*chosen, i])
        if fits(_joined(lines, trial)):
            chosen = trial
    return _joined(lines, chosen) if chosen else text


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
