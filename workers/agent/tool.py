"""The search tool as the agent sees it: anything with `.search(query, k)` returning hits
that have `.chunk_id` and `.text` (a `workers.search.SearchIndex` fits)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Hit(Protocol):
    chunk_id: str
    text: str


class SearchTool(Protocol):
    def search(self, query: str, k: int = 5) -> Sequence[Hit]: ...


def format_hits(hits: Sequence[Hit]) -> str:
    """The text inside `<results>`: the search area's formatter when it is installed
    (it knows pages and documents), else chunk id and text per hit."""
    try:
        from workers.search.tool import format_hits_for_model
    except ImportError:
        return "\n\n".join(f"[{h.chunk_id}]\n{h.text.strip()}" for h in hits) or "(no results)"
    return format_hits_for_model(list(hits))
