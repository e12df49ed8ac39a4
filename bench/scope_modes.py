"""What a scope should do when the agent writes the wrong one: the same checkpoints, searching
with the index's scopes as they are ("hard": only the named documents) or as a preference
("soft": the named documents' best hit and the whole index's best hit in turn).

    python bench/scope_modes.py --index INDEX --questions Q.jsonl --runs RUN... [--mode soft]

Each run's checkpoint answers the questions it held out, greedily under its recorded limits,
with the search tool wrapped as `--mode` says; the table gives pooled recall and strict
accuracy with their intervals, and the paired difference against the runs' recorded answers
(hard scopes). A student that scopes a question to a word of it that names some other
document ("[In]" for "In x += 1, …") loses the golden passage under a hard scope; a soft one
keeps half of the results for the question itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.evaluation.compare import _attempts, run_limits  # noqa: E402
from engine.evaluation.pooled import held_out, read_run, score_attempts  # noqa: E402
from engine.evaluation.stats import bootstrap_mean, paired_difference  # noqa: E402
from engine.rewards.judge import OfflineJudge  # noqa: E402
from engine.search.index import SearchIndex, split_scope  # noqa: E402


class SoftScope:
    """The index, its scopes read as a preference: the named documents' hits and the whole
    index's hits for the same words, in turn, each once."""

    def __init__(self, index: SearchIndex):
        self.index = index

    def __getattr__(self, name):
        return getattr(self.index, name)

    def search(self, query: str, k: int = 5, question: str = "", **kwargs):
        scoped = self.index.search(query, k, question=question, **kwargs)
        scope, rest = split_scope(query)
        if not scope or not rest.strip():
            return scoped
        anywhere = self.index.search(rest, k, question=question, **kwargs)
        merged, seen = [], set()
        for pair in zip(scoped + [None] * k, anywhere + [None] * k, strict=False):
            for hit in pair:
                if hit is not None and hit.chunk_id not in seen:
                    seen.add(hit.chunk_id)
                    merged.append(hit)
        return merged[:k]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--runs", nargs="+", required=True)
    parser.add_argument("--mode", choices=["soft"], default="soft")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args(argv)

    index = SearchIndex.load(args.index)
    questions = load_questions(args.questions)
    map_evidence(questions, index.chunks)
    judge = OfflineJudge()
    tool = SoftScope(index)
    options = SimpleNamespace(device="cpu", batch_size=args.batch_size)
    recorded, replayed = [], []
    for folder in args.runs:
        run = read_run(folder)
        kept = held_out(run, questions)
        limits = run_limits(run.config)
        recorded.append({q.id: run.attempts["trained"][q.id] for q in kept})
        replayed.append(
            _attempts(
                f"{run.name} ({args.mode})",
                str(run.checkpoint),
                kept,
                index=tool,
                limits=limits,
                args=options,
            )
        )
    hard = score_attempts("hard", recorded, questions, judge)
    soft = score_attempts(args.mode, replayed, questions, judge)
    print("| metric | hard (recorded) | soft | soft − hard |\n|---|---|---|---|")
    for metric in ("recall", "correct", "chunks"):
        a, b = getattr(hard, metric), getattr(soft, metric)
        shared = sorted(set(a) & set(b))
        xs, ys = [a[q] for q in shared], [b[q] for q in shared]
        d = paired_difference(ys, xs)
        print(
            f"| {'accuracy' if metric == 'correct' else metric} | {bootstrap_mean(xs)} | "
            f"{bootstrap_mean(ys)} | {d} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
