"""Search speed on the FinanceBench pages: our bm25s index against rank_bm25 (the usual
pure-Python BM25) on the same chunks and tokens, in one run, plus the latency of the
agent's actual tool call (query in, `<results>` text for the model out).

    .venv/bin/python bench/search_speed.py [--pages PATH] [--rank-bm25-queries N]

Targets (2-core machine): at least 300x rank_bm25's queries/s, tool-call p99 < 5 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from rank_bm25 import BM25Okapi

from engine.documents.corpus import build_corpus
from engine.documents.questions import load_questions
from engine.search.index import SearchIndex, indexed_text, page_headings, page_of, tokenize
from engine.search.tool import format_hits_for_model

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets" / "financebench-dev"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", default=str(DATA / "pages.jsonl.gz"))
    parser.add_argument("--questions", default=str(DATA / "questions.jsonl"))
    parser.add_argument(
        "--rank-bm25-queries",
        type=int,
        default=40,
        help="rank_bm25 is slow: time it on this many queries",
    )
    parser.add_argument("--repeats", type=int, default=20, help="passes over the queries")
    args = parser.parse_args()
    if not Path(args.pages).is_file():
        print(f"no pages file at {args.pages}", file=sys.stderr)
        return 2

    chunks = build_corpus([args.pages]).chunks
    queries = [q.question for q in load_questions(args.questions)]
    print(f"{len(chunks)} chunks, {len(queries)} queries (FinanceBench questions)")

    started = time.perf_counter()
    index = SearchIndex.build(chunks)
    ours_build = time.perf_counter() - started
    started = time.perf_counter()
    headings = page_headings(index.chunks)
    baseline = BM25Okapi([tokenize(indexed_text(c, headings[page_of(c)])) for c in index.chunks])
    base_build = time.perf_counter() - started

    def baseline_search(query: str, k: int = 10) -> list[int]:
        scores = baseline.get_scores(tokenize(query))
        return list(np.argsort(-scores, kind="stable")[:k])

    for q in queries[:3]:  # warm both up
        index.search(q, k=10)
        baseline_search(q)
    timed = queries[: args.rank_bm25_queries]
    started = time.perf_counter()
    for q in timed:
        baseline_search(q)
    base_qps = len(timed) / (time.perf_counter() - started)
    started = time.perf_counter()
    for _ in range(args.repeats):
        for q in queries:
            index.search(q, k=10)
    ours_qps = args.repeats * len(queries) / (time.perf_counter() - started)

    latencies = []
    for _ in range(args.repeats):
        for q in queries:
            t = time.perf_counter()
            format_hits_for_model(index.search(q, k=5))
            latencies.append((time.perf_counter() - t) * 1000)
    p50 = statistics.median(latencies)
    p99 = float(np.percentile(latencies, 99))

    print(f"\n{'':28}{'sleuth (bm25s)':>16}{'rank_bm25':>12}{'ratio':>10}")
    print(
        f"{'index build (s)':28}{ours_build:>16.2f}{base_build:>12.2f}"
        f"{base_build / ours_build:>9.1f}x"
    )
    print(f"{'queries/s (k=10)':28}{ours_qps:>16.0f}{base_qps:>12.1f}{ours_qps / base_qps:>9.0f}x")
    print(f"\ntool call (search k=5 + format for the model), {len(latencies)} calls:")
    print(f"  p50 {p50:.2f} ms   p99 {p99:.2f} ms")
    print(
        f"\ntargets: >= 300x queries/s: {'met' if ours_qps / base_qps >= 300 else 'NOT met'}; "
        f"p99 < 5 ms: {'met' if p99 < 5 else 'NOT met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
