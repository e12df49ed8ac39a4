"""Data-parallel training on CPU ranks: the same work on 1 and 2 ranks of one thread each.

The work is a small slice of the `cpu-45min` preset on python-reference, with the default
model (SmolLM2-135M, its top layers trained as the preset trains them): one epoch of cold
start on the scripted teacher's trajectories for `--questions` training questions, then one
RL step of 4 questions × 4 rollouts. Each world size runs it from the same weights and seed
(`training.distributed.train_on_ranks`, this process rank 0); the steps are the same, so the
runs differ only in how the work is spread. Reported side by side: the cold start's seconds,
the RL step's rollouts and update, and the second rank's efficiency, t₁ / (2 · t₂) (1.0 is a
perfect halving). Each rank runs one torch thread, so the ranks do not share cores: on this
2-core machine two ranks are all it has.

    sleuth index --docs datasets/python-reference/pages.jsonl.gz --out var/pyref-index
    .venv/bin/python bench/data_parallel.py [--index var/pyref-index --questions 12]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.agent.models import load_trainable  # noqa: E402
from engine.documents.evidence import map_evidence  # noqa: E402
from engine.documents.questions import load_questions  # noqa: E402
from engine.search.index import SearchIndex  # noqa: E402
from engine.training.distributed import RankJob, train_on_ranks  # noqa: E402
from engine.training.presets import preset_config  # noqa: E402
from engine.training.rl import train  # noqa: E402

QUESTIONS = "datasets/python-reference/questions.jsonl"


def work(index_dir: str, questions: int):
    """The run's settings and its training questions (the first fold's first `questions`)."""
    config = preset_config(
        "cpu-45min",
        {
            "folds": 2,
            "fold": 0,
            "sft_epochs": 1,
            "sft_share": 1.0,
            "synthetic_questions": 0,
            "steps": 1,
            "questions_per_step": 4,
            "group_size": 4,
            "eval_every": 0,
            "save_every": 0,
            "max_minutes": None,
        },
    )
    all_questions = load_questions(QUESTIONS)
    map_evidence(all_questions, SearchIndex.load(index_dir).chunks)
    train_questions, _ = config.split(all_questions)
    return config, train_questions[:questions]


def timed(world: int, config, index_dir: str, train_questions, out: Path) -> dict:
    job = RankJob(config.to_dict(), index_dir, train_questions, [], str(out), False, threads=1)

    def rank0(ranks):
        model, tokenizer = load_trainable(config.model)
        return train(
            config,
            model=model,
            tokenizer=tokenizer,
            index=SearchIndex.load(index_dir),
            train_questions=train_questions,
            val_questions=[],
            out_dir=out,
            progress=False,
            log=lambda message: None,
            final_eval_questions=0,
            ranks=ranks,
        )

    torch.set_num_threads(1)
    summary = train_on_ranks(world, job, rank0)
    step = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    return {
        "cold start s": summary["cold_start_seconds"],
        "cold start batches": summary["cold_start_batches"],
        "rollouts s": step["rollout_s"],
        "update s": step["train_s"],
        "RL step s": step["step_s"],
        "reward": step["reward/total"],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", default="var/pyref-index")
    parser.add_argument("--questions", type=int, default=12)
    args = parser.parse_args(argv)

    config, train_questions = work(args.index, args.questions)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        for world in (1, 2):
            results[world] = timed(
                world, config, args.index, train_questions, Path(folder) / f"w{world}"
            )
            print(f"{world} rank(s): {results[world]}", file=sys.stderr)

    one, two = results[1], results[2]
    print(
        f"{len(train_questions)} training questions, one cold-start epoch "
        f"({one['cold start batches']} batches), one RL step (4 × 4 rollouts), 1 thread a rank\n"
    )
    print("| | 1 rank | 2 ranks | speed-up | efficiency of the second rank |")
    print("|---|---|---|---|---|")
    for key in ("cold start s", "rollouts s", "update s", "RL step s"):
        speedup = one[key] / max(two[key], 1e-9)
        print(f"| {key} | {one[key]:.1f} | {two[key]:.1f} | {speedup:.2f}× | {speedup / 2:.2f} |")
    print(f"\nsame work: reward {one['reward']:.3f} and {two['reward']:.3f} on the RL step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
