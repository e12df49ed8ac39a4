"""The search tool as the agent sees it: hits formatted as the text inside
`<results>…</results>`, each with its chunk id, document, page and text."""

from __future__ import annotations

from workers.search.index import SearchHit

NO_RESULTS = "No results. Try other words: the documents may name it differently."
HIT_SEPARATOR = "\n\n"


def format_hit(hit: SearchHit, max_chars: int | None = None) -> str:
    """One hit: `[chunk id] doc | page N`, then its text (cut to max_chars)."""
    text = hit.text
    if max_chars is not None and len(text) > max_chars:
        text = text[:max_chars].rstrip() + " …"
    page = f" | page {hit.page}" if hit.page is not None else ""
    return f"[{hit.chunk_id}] {hit.doc}{page}\n{text}"


def format_hits_for_model(hits: list[SearchHit], max_chars_per_hit: int | None = None) -> str:
    if not hits:
        return NO_RESULTS
    return HIT_SEPARATOR.join(format_hit(hit, max_chars_per_hit) for hit in hits)
