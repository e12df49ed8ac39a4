"""Multi-turn rollout throughput: the batched hf engine against `model.generate` run on
one trajectory at a time (the baseline), same model, prompts, tool and limits, one run.

Prints generated tokens/s for both, their ratio, and the peak RSS of the batched run.
Usage: python bench/rollout_throughput.py [--index var/fb-index] [--n 16] [--threads 2]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import torch

from workers.agent.hf_engine import HFRolloutEngine
from workers.agent.models import load_model
from workers.agent.protocol import STOP_STRINGS
from workers.agent.trajectory import PROMPT, Limits, SamplingParams, Trajectory

DATASET = Path(__file__).resolve().parents[1].parent / "shared/datasets/financebench-dev"


class SyntheticIndex:
    """Used when no index folder is given: fixed chunks, so only the engine is measured."""

    def search(self, query: str, k: int = 5):
        from workers.search.index import SearchHit

        text = "Purchases of property, plant and equipment were $1,577 million in 2018. " * 8
        return [SearchHit(f"c{i}", 1.0, "doc", i, "acme", text) for i in range(k)]


def sequential_generate(engine: HFRolloutEngine, questions, sampling) -> list[Trajectory]:
    """The baseline: each trajectory alone with `model.generate`, the same tool loop."""
    model, tokenizer = engine.model, engine.tokenizer
    out = []
    for i, question in enumerate(questions):
        torch.manual_seed(sampling.seed + i)
        trajectory = Trajectory(question=question)
        trajectory.append(engine.prompt_ids(question), PROMPT)
        while not trajectory.finished:
            budget = engine._budget(trajectory)
            if budget <= 0:
                trajectory.finish_reason = "max_tokens"
                break
            ids = torch.tensor([trajectory.token_ids])
            result = model.generate(
                ids,
                attention_mask=torch.ones_like(ids),
                max_new_tokens=budget,
                do_sample=True,
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                stop_strings=list(STOP_STRINGS),
                tokenizer=tokenizer,
                pad_token_id=engine.pad_id,
                output_scores=True,
                return_dict_in_generate=True,
            )
            new = result.sequences[0, ids.shape[1] :].tolist()
            scores = torch.stack(result.scores)[:, 0].float()
            logprobs = torch.log_softmax(scores, -1).gather(1, torch.tensor(new)[:, None])[:, 0]
            ended_by_eos = bool(new) and new[-1] in engine.stop_ids
            engine._after_segment(trajectory, new, logprobs.tolist(), ended_by_eos)
        out.append(trajectory)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", default=None)
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    if args.index:
        from workers.search.index import SearchIndex

        tool = SearchIndex.load(args.index)
    else:
        tool = SyntheticIndex()
    questions = [
        json.loads(line)["question"]
        for line in (DATASET / "questions.jsonl").read_text().splitlines()
    ][: args.n]
    model, tokenizer = load_model()
    limits = Limits(max_turns=3, max_new_tokens=args.max_new_tokens, max_result_tokens=256)
    engine = HFRolloutEngine(model, tokenizer, tool, limits=limits, batch_size=args.n)
    sampling = SamplingParams(temperature=0.7, top_p=0.95, seed=0)

    def report(name, trajectories, seconds):
        tokens = sum(t.model_tokens for t in trajectories)
        searches = sum(len(t.searches) for t in trajectories)
        print(
            f"{name:<28} {tokens:>6} tokens  {searches:>3} searches  {seconds:7.1f} s  "
            f"{tokens / seconds:7.1f} tok/s",
            flush=True,
        )
        return tokens / seconds

    print(f"{args.n} trajectories, {args.threads} threads, max_new_tokens={args.max_new_tokens}")
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    started = time.perf_counter()
    batched = engine.rollout(questions, sampling)
    fast = report("batched hf engine", batched, time.perf_counter() - started)
    # Peak RSS so far: the batched run is the only big allocation after loading.
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS after batched rollout: {peak_mb:.0f} MB (after loading: {rss_before:.0f} MB)")

    started = time.perf_counter()
    alone = sequential_generate(engine, questions, sampling)
    slow = report("model.generate, one by one", alone, time.perf_counter() - started)
    print(f"throughput ratio (batched / one by one): {fast / slow:.2f}x")


if __name__ == "__main__":
    main()
