"""A child rank of a run on several devices: `python -m engine.training.rank JOB_FILE`, as
`distributed.train_on_ranks` starts it. Its own module, above both: `distributed` is what
`rl`, `sft` and the cold start share, and this entry point runs `rl.train`."""

import pickle
import sys
from pathlib import Path

import torch

from engine.agent.models import load_trainable
from engine.search.index import SearchIndex
from engine.training.config import TrainConfig
from engine.training.distributed import RankJob, exit_with_parent, join_from_env, leave
from engine.training.rl import train


def child_main(job_file: str) -> int:
    """A child rank: load what `job_file` names, join the group, train its share."""
    exit_with_parent()
    job: RankJob = pickle.loads(Path(job_file).read_bytes())
    if job.threads:
        torch.set_num_threads(job.threads)
    config = TrainConfig.from_dict(job.config)
    model, tokenizer = load_trainable(config.model)
    index = SearchIndex.load(job.index_dir)
    ranks = join_from_env()
    try:
        train(
            config,
            model=model,
            tokenizer=tokenizer,
            index=index,
            train_questions=job.train_questions,
            val_questions=job.val_questions,
            out_dir=Path(job.out_dir),
            resume=job.resume,
            progress=False,
            log=lambda message: None,
            final_eval_questions=job.final_eval_questions,
            ranks=ranks,
        )
    finally:
        leave()
    return 0


if __name__ == "__main__":
    sys.exit(child_main(sys.argv[1]))
