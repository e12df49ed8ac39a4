"""The search tool as the agent sees it: anything with `.search(query, k, question=...)`
returning hits shaped like `engine.search.index.SearchHit` (a `SearchIndex` fits; tests pass
fakes). `question` is the question the agent searches for, which a tool may read a query's
scope by (`SearchIndex`: a scope naming several companies searches those the question names)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from typing import Protocol

from engine.search.tool import HIT_SEPARATOR, NO_RESULTS, excerpt, format_hit


class Hit(Protocol):
    chunk_id: str
    doc: str
    page: int | None
    text: str


class SearchTool(Protocol):
    def search(self, query: str, k: int = 5, question: str = "") -> Sequence[Hit]: ...


def new_hits(
    tool: SearchTool, query: str, k: int, shown: Collection[str], question: str = ""
) -> list[Hit]:
    """The top k hits of `query`, searched for `question`, that the conversation has not
    `shown` yet (protocol 4): a second search close to the first, which a small model writes
    often, shows the next results instead of the same ones again."""
    hits = tool.search(query, k=k + len(shown), question=question)
    return [hit for hit in hits if hit.chunk_id not in shown][:k]


def fit_hits(
    hits: Sequence[Hit], room: int, encode: Callable[[str], list[int]], query: str = ""
) -> tuple[list[int], list[str], bool]:
    """The `<results>` body as tokens within `room`: every hit gets an equal share, so a
    long first hit cannot push the others out (each is shown in part instead: its lines
    that hold the `query`'s words, `engine.search.tool.excerpt`). Returns the tokens, the
    ids of the hits whose header survived, and whether anything was cut."""
    if not hits:
        return encode(NO_RESULTS)[:room], [], False
    separator = encode(HIT_SEPARATOR)
    share = max((room - len(separator) * (len(hits) - 1)) // len(hits), 0)
    body: list[int] = []
    shown: list[str] = []
    truncated = False
    for i, hit in enumerate(hits):
        ids = encode(format_hit(hit))
        header = encode(f"[{hit.chunk_id}]")
        if len(ids) > share:

            def fits(text: str, hit: Hit = hit) -> bool:
                return len(encode(format_hit(hit, text=text))) <= share

            ids = encode(format_hit(hit, text=excerpt(hit.text, query, fits)))[:share]
            truncated = True
        if len(ids) >= len(header):
            shown.append(hit.chunk_id)
        body += (separator if i else []) + ids
    return body, shown, truncated
