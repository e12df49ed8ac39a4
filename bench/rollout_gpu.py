"""Rollout throughput of the hf engine on a GPU: the RL-step workload as the trainer now runs
it there, against how it ran it before, in the same process.

- "before": 16 rows decoded at a time and every token sampled on the CPU (the logits copied
  to the host at each step, one multinomial per row there), as on a CPU worker.
- "after": the engine's GPU defaults: all the step's rows in one batch, sampled on the GPU
  with per-trajectory generators there, one copy of the sampled ids per step.

The workload: `--questions` x `--group` trajectories of the cpu-45min preset's limits (3
searches, 160 model tokens, 2 results cut to 400 tokens), temperature 0.7, segments forced
to end every `--segment-tokens` tokens as in bench/rollout_throughput.py (an untrained
model would ramble in one segment). The GPU preset's step is 8 questions x 8.

With `--random-weights FOLDER` (a model folder's config.json and tokenizer, no weights) the
model is that shape initialised at random: the engine's cost does not depend on the
weights, so a GPU machine without the model's files measures the same thing.

Usage: python bench/rollout_gpu.py [--random-weights FOLDER] [--questions 8] [--group 8]
       [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time
from pathlib import Path

import torch
from rollout_throughput import DATASET, REPO, ForcedTurns, SyntheticIndex
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.models import load_model
from engine.agent.trajectory import Limits, SamplingParams


class BeforeEngine(HFRolloutEngine):
    """The engine as it ran on a GPU before: 16 rows at a time, sampling on the CPU."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "batch_size": 16})

    def _generator(self, seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)


def forced(cls, segment_tokens: int):
    if not segment_tokens:
        return cls
    return type(f"Forced{cls.__name__}", (ForcedTurns, cls), {"segment_tokens": segment_tokens})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", default=str(REPO / "var/fb-index"))
    parser.add_argument("--questions-file", default=str(DATASET / "questions.jsonl"))
    parser.add_argument("--random-weights", help="a model folder's config and tokenizer")
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--segment-tokens", type=int, default=40)
    parser.add_argument("--profile", action="store_true", help="the after engine's top calls")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"

    if Path(args.index, "index.json").exists():
        from engine.search.index import SearchIndex

        tool = SearchIndex.load(args.index)
    else:
        tool = SyntheticIndex()
    lines = Path(args.questions_file).read_text().splitlines()
    picked = [json.loads(line)["question"] for line in lines[: args.questions]]
    questions = [q for q in picked for _ in range(args.group)]
    if args.random_weights:
        torch.manual_seed(0)
        config = AutoConfig.from_pretrained(args.random_weights)
        model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16).to(device).eval()
        tokenizer = AutoTokenizer.from_pretrained(args.random_weights)
    else:
        model, tokenizer = load_model("default", device=device)
        model.to(torch.bfloat16)
    limits = Limits(max_turns=3, max_new_tokens=160, results_per_search=2, max_result_tokens=400)
    sampling = SamplingParams(temperature=0.7, top_p=1.0, seed=1234)
    print(
        f"{len(questions)} trajectories ({args.questions} questions x {args.group}) on "
        f"{torch.cuda.get_device_name() if device == 'cuda' else 'cpu'}, bfloat16, "
        f"{'random' if args.random_weights else 'trained'} weights, forced segments of "
        f"{args.segment_tokens or 'none'} tokens",
        flush=True,
    )

    def run(cls) -> tuple[float, int]:
        engine = forced(cls, args.segment_tokens)(model, tokenizer, tool, limits=limits)
        engine.rollout(questions[:2], SamplingParams(temperature=0.7, seed=0))  # warm-up
        if device == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        trajectories = engine.rollout(questions, sampling)
        if device == "cuda":
            torch.cuda.synchronize()
        return time.perf_counter() - started, sum(t.model_tokens for t in trajectories)

    rates = {}
    for name, cls in (("before", BeforeEngine), ("after", HFRolloutEngine)):
        seconds, generated = run(cls)
        rates[name] = generated / seconds
        print(f"{name}: {generated} model tokens in {seconds:.1f} s, {rates[name]:.0f} tok/s")
    print(f"ratio after/before tok/s: {rates['after'] / rates['before']:.2f}x")
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(run, HFRolloutEngine)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(15)


if __name__ == "__main__":
    main()
