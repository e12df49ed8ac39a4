"""Cold-start batching: packed rows, grouped by length, and grouped with the shared system
prompt run once a micro-batch, on the same set.

The set is the one `sleuth train --preset cpu-45min` imitates on financebench-dev (built the
same way: the scripted teacher's trajectories on the training questions and the synthetic
ones, then the scope drills; about 2 minutes), 1,244 trajectories of 200 to 1,240 tokens on
seed 1, in clumps (first-search drills of 200-300 tokens, one search's results, two
searches' results). Each way batches it at the preset's 4,096 tokens a micro-batch; each
times forward, backward and an AdamW step on the default model frozen below its top 6
layers, as the preset trains: the micro-batches sorted by width in `--batches` strata of
equal count, one of each stratum timed and counted for all of it. Reported for each:
micro-batches an epoch, the share of computed tokens that are padding, seconds a
micro-batch, an epoch's minutes, and the ratios to packed rows (the way before both).

    .venv/bin/python bench/cold_start_batching.py [--index var/fb-index --split-seed 1
        --batches 12 --precision float32]
"""

import argparse
import random
import time
from itertools import pairwise

import torch

from engine.agent.engines import build_rollout_engine
from engine.agent.models import load_trainable
from engine.documents.evidence import map_evidence
from engine.documents.questions import load_questions, split_by_entity
from engine.search.index import SearchIndex
from engine.training.batching import (
    collate_packed,
    length_grouped_micro_batches,
    packed_micro_batches,
)
from engine.training.cold_start import cold_start_set, teacher_data
from engine.training.logprobs import batch_logprobs
from engine.training.presets import preset_config
from engine.training.rl import freeze_below

QUESTIONS = "../shared/datasets/financebench-dev/questions.jsonl"


def preset_cold_start(index_path: str, questions_path: str, split_seed: int):
    """The model, as the preset trains it, and the trajectories its cold start imitates."""
    config = preset_config("cpu-45min", {"split_seed": split_seed})
    index = SearchIndex.load(index_path)
    questions = load_questions(questions_path)
    map_evidence(questions, index.chunks)
    train_questions, _ = split_by_entity(
        questions, val_fraction=config.val_fraction, seed=config.entity_split_seed()
    )
    model, tokenizer = load_trainable(config.model)
    engine = build_rollout_engine(
        config.rollout_engine, model, tokenizer, index, limits=config.limits, model_name="bench"
    )
    teacher, teacher_for, by_id = teacher_data(engine, index, train_questions, config, print)
    trajectories = cold_start_set(
        engine, teacher, teacher_for, by_id, train_questions, config, print
    )
    freeze_below(model, config.train_layers)
    return model, trajectories, config.max_batch_tokens


def sft_step(model, optimizer, batch, precision: str, share_prefix: bool) -> None:
    logp, _ = batch_logprobs(model, batch, precision=precision, share_prefix=share_prefix)
    loss = -(logp * batch.loss_mask).sum() / batch.loss_mask.sum().clamp(min=1)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", default="var/fb-index")
    parser.add_argument("--questions", default=QUESTIONS)
    parser.add_argument("--split-seed", type=int, default=1)
    parser.add_argument("--batches", type=int, default=12, help="strata timed of each")
    parser.add_argument("--precision", default="float32", choices=["float32", "bfloat16"])
    args = parser.parse_args()
    torch.manual_seed(0)

    model, trajectories, max_tokens = preset_cold_start(args.index, args.questions, args.split_seed)
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-6)
    lengths = [len(t.token_ids) for t in trajectories]
    items = range(len(trajectories))

    results = {}
    for name, batcher, share_prefix in (
        ("packed rows (before)", packed_micro_batches, False),
        ("grouped by length", length_grouped_micro_batches, False),
        ("grouped, prefix shared", length_grouped_micro_batches, True),
    ):
        batches = batcher(items, lengths, max_tokens)
        collated = [
            collate_packed([[trajectories[i] for i in row] for row in rows]).to(model.device)
            for rows in batches
        ]
        computed = sum(b.input_ids.numel() for b in collated)
        sft_step(model, optimizer, collated[0], args.precision, share_prefix)  # warm-up
        # Stratified by shape: micro-batches sorted by their width in strata of
        # equal count, one drawn from each and timed, standing for its stratum. A plain
        # random sample mixes batches of 3 and of 16 trajectories and misjudges an epoch.
        order = sorted(range(len(batches)), key=lambda k: collated[k].input_ids.shape[1])
        cuts = [i * len(order) // args.batches for i in range(args.batches + 1)]
        strata = [order[a:b] for a, b in pairwise(cuts)]
        # The same draw for each way: grouped with and without the shared prefix then time
        # the very same batches, so their ratio is the prefix's alone.
        rng = random.Random(0)
        epoch_seconds, timed = 0.0, 0
        for stratum in strata:
            if not stratum:
                continue
            k = rng.choice(stratum)
            started = time.perf_counter()
            sft_step(model, optimizer, collated[k], args.precision, share_prefix)
            seconds = time.perf_counter() - started
            epoch_seconds += seconds * len(stratum)
            timed += 1
        epoch_minutes = epoch_seconds / 60
        results[name] = epoch_minutes
        print(
            f"{name:<22} {len(batches):4d} micro-batches an epoch, "
            f"{1 - sum(lengths) / computed:5.1%} padding, {epoch_seconds / len(batches):5.2f} s "
            f"each ({timed} timed), "
            f"epoch ≈ {epoch_minutes:5.1f} min",
            flush=True,
        )
    before = results["packed rows (before)"]
    print(
        " · ".join(f"{name}: {before / minutes:.2f}×" for name, minutes in results.items())
        + f" the trajectories a minute of packed rows ({len(trajectories)} trajectories, "
        f"{sum(lengths)} tokens, {args.precision}, {torch.get_num_threads()} threads)"
    )


if __name__ == "__main__":
    main()
