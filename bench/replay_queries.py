"""A search setting measured without training: replay the validation queries that trained
agents wrote (`eval_trajectories.jsonl` of finished runs) through the search tool as it is
now, with K hits a search, and report their golden recall at each K.

A training run's recall moves with its draw (which questions' scopes and phrases the student
writes right) by more than most search changes move it; its queries, replayed, hold the
student fixed. What a replay cannot show is the student's next search after other results:
it measures the tool and K on the searches the agents made, not a student trained with them.
Each search shows only the hits not shown before in its trajectory (protocol 4), through the
same result-token budget and cut as the agent's engine (`agent/tool.fit_hits`), with the
run's own tokenizer and budget (`final/agent.json`); a hit whose id was cut is not shown.

    .venv/bin/python bench/replay_queries.py var/proof33-s0 var/proof33-s1 [--k 2,3]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from transformers import AutoTokenizer

from engine.agent.settings import read_agent_settings
from engine.agent.tool import fit_hits, new_hits
from engine.documents.evidence import map_evidence
from engine.documents.questions import load_questions
from engine.search.index import SearchIndex

REPO = Path(__file__).resolve().parents[1]
QUESTIONS = REPO.parent / "shared/datasets/financebench-dev/questions.jsonl"
RESULTS_FRAME = "\n<results>\n", "\n</results>\n"  # around a search's hits, as the engine


def replayed_recall(run: Path, index: SearchIndex, golden_of: dict, k: int) -> float | None:
    """Mean golden recall of `run`'s trained-agent validation queries replayed with k hits."""
    path = run / "eval_trajectories.jsonl"
    if not path.exists():
        return None
    tokenizer = AutoTokenizer.from_pretrained(run / "final")
    limits = read_agent_settings(run / "final").limits

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False)

    room = limits.max_result_tokens - sum(len(encode(part)) for part in RESULTS_FRAME)
    recalls = []
    for line in path.open():
        trajectory = json.loads(line)
        golden = golden_of.get(trajectory["question_id"])
        if trajectory["policy"] != "trained" or not golden:
            continue
        shown: list[str] = []
        for search in trajectory["searches"]:
            if search.get("malformed"):
                continue
            hits = new_hits(index, search["query"], k, set(shown))
            shown += fit_hits(hits, max(room, 0), encode, search["query"])[1]
        recalls.append(len(golden & set(shown)) / len(golden))
    return sum(recalls) / len(recalls) if recalls else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="finished run folders")
    parser.add_argument("--index", default=str(REPO / "var/fb-index"))
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--k", default="2,3", help="hits per search to replay with")
    args = parser.parse_args()
    ks = [int(k) for k in args.k.split(",")]
    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    golden_of = {q.id: set(q.golden_chunk_ids) for q in questions}
    print(f"{'run':<24}" + "".join(f"{f'k={k}':>8}" for k in ks))
    for run in args.runs:
        recalls = [replayed_recall(run, index, golden_of, k) for k in ks]
        if all(r is None for r in recalls):
            continue
        print(f"{run.name:<24}" + "".join(f"{r:>8.3f}" for r in recalls))


if __name__ == "__main__":
    main()
