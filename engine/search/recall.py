"""Retrieval recall of golden evidence: the "query echo" baseline, where the question
itself is the query. Every agent must beat it.

recall@k of a question is the share of its mapped evidence passages that have a chunk
in the top k; passages that could not be mapped count as misses. The metric is the mean
over questions that have evidence.
"""

from __future__ import annotations

from engine.documents.questions import Question
from engine.search.index import SearchIndex


def echo_recall(index: SearchIndex, questions: list[Question], ks: list[int]) -> dict[str, float]:
    ks = sorted(set(ks))
    totals = dict.fromkeys(ks, 0.0)
    counted = 0
    for q in questions:
        if not q.evidence:
            continue
        counted += 1
        ranked = [h.chunk_id for h in index.search(q.question, k=max(ks))]
        for k in ks:
            top = set(ranked[:k])
            found = sum(1 for ev in q.evidence if top.intersection(ev.chunk_ids))
            totals[k] += found / len(q.evidence)
    return {f"recall@{k}": round(totals[k] / counted, 4) if counted else 0.0 for k in ks}
