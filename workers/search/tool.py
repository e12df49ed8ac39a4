"""The search tool as the agent sees it: hits formatted as the text inside
`<results>…</results>`, each with its chunk id, document, page and text."""

from __future__ import annotations

from workers.search.index import SearchHit


def format_hits_for_model(hits: list[SearchHit], max_chars_per_hit: int | None = None) -> str:
    if not hits:
        return "No results. Try other words: the documents may name it differently."
    blocks = []
    for hit in hits:
        text = hit.text
        if max_chars_per_hit is not None and len(text) > max_chars_per_hit:
            text = text[:max_chars_per_hit].rstrip() + " …"
        page = f" | page {hit.page}" if hit.page is not None else ""
        blocks.append(f"[{hit.chunk_id}] {hit.doc}{page}\n{text}")
    return "\n\n".join(blocks)
