"""The search tool as the agent sees it: anything with `.search(query, k)` returning hits
shaped like `workers.search.index.SearchHit` (a `SearchIndex` fits; tests pass fakes)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from workers.search.tool import format_hits_for_model


class Hit(Protocol):
    chunk_id: str
    doc: str
    page: int | None
    text: str


class SearchTool(Protocol):
    def search(self, query: str, k: int = 5) -> Sequence[Hit]: ...


def format_hits(hits: Sequence[Hit]) -> str:
    """The text inside `<results>`, written by the search area's formatter."""
    return format_hits_for_model(list(hits))
