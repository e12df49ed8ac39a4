"""Rollout throughput on the RL-step workload: the hf engine against the engine it replaced.

The workload is one RL step of the "cpu-45min" preset: 4 questions x a group of 4 samples
(16 trajectories), temperature 0.7, at most 3 searches, 160 model tokens, 2 results per
search cut to 400 tokens, the default model (SmolLM2-135M) on the FinanceBench index
(`var/fb-index`, else a synthetic one). Both engines run it in the same process:

- `ReprefillEngine` (below): the engine before issue 17, kept here as the baseline. At
  every round it prefills every trajectory's whole sequence again (prompt, earlier turns,
  results), left-padded to the longest row, four rows at a time; it shares nothing.
- `HFRolloutEngine`: keeps each trajectory's keys/values between rounds, prefills a group's
  prompt once, and decodes over a cache written in place.
- `HFRolloutEngine` in bfloat16 ("new-bf16"): the same engine over the bfloat16 copy of the
  weights that a run with `precision` "bfloat16" (the CPU presets' "auto" here) samples
  from; its FLOP share is against the bfloat16 matmul peak.

Forced turns (the default, `--segment-tokens 40`): untrained SmolLM2 ignores the tags and
rambles to its budget in one segment, so a run would be one round and never exercise
multi-turn rollouts. Here a segment ends after 40 tokens and, while searches remain, a
segment with no tag of its own counts as a search of the question: the tool appends real
results and the model goes on. A trajectory is then prompt, 40 tokens, results, 40, results,
40, results, 40 (4 rounds, ~1.5k tokens), the most a step of the preset can hold.
`--segment-tokens 0` measures what the untrained model does (one 160-token segment).

Prints tokens/s (model tokens generated per second of rollout) of both engines, their
ratio, whether they produced the same tokens, and the rollout's useful FLOP/s, 2 x params x
every token of every trajectory (prefill + decode, prompt, model and tool tokens, each
counted once per trajectory) over the new engine's wall time, as a share of the fp32 matmul
peak measured here (best of rounds of a 1024x1024 matmul). Also printed: the same with the
embedding matrix left out for prefill tokens (their logits are never computed), and the
tokens each engine actually ran through the model (padding and re-prefills included).

Usage: python bench/rollout_throughput.py [--index var/fb-index] [--threads 2]
       [--segment-tokens 40] [--skip-old]
"""

from __future__ import annotations

import argparse
import copy
import json
import time
from pathlib import Path

import torch
from transformers.cache_utils import DynamicCache

from engine.agent.hf_engine import _STOP_TAIL_TOKENS, HFRolloutEngine, _sample
from engine.agent.models import load_model, returned_cache, with_cache
from engine.agent.protocol import parse_segment, segment_stopped
from engine.agent.trajectory import MODEL, Limits, SamplingParams

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO.parent / "shared/datasets/financebench-dev"
_PREFILL_ROWS = 4  # the old engine's rows prefilled at once


class ReprefillEngine(HFRolloutEngine):
    """The engine before issue 17: each round re-prefills every whole sequence, padded."""

    @torch.inference_mode()
    def _generate(
        self,
        sequences,
        generators,
        budgets,
        stops,
        sampling,
        groundings=None,
        questions=None,
        searched=None,
    ):
        assert not any(groundings or []), "the old engine had no grounded figures"
        device = self.model.device
        n, width = len(sequences), max(len(s) for s in sequences)
        input_ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        attention = torch.zeros((n, width), dtype=torch.long)
        for row, seq in enumerate(sequences):
            input_ids[row, width - len(seq) :] = torch.tensor(seq)
            attention[row, width - len(seq) :] = 1
        input_ids, attention = input_ids.to(device), attention.to(device)
        positions = (attention.cumsum(-1) - 1).clamp(min=0)
        logits, cache = self._prefill_padded(input_ids, attention, positions)

        out = [([], [], False) for _ in range(n)]
        rows = list(range(n))
        last_pos = positions[:, -1]
        while True:
            tokens, logprobs = _sample(logits, [generators[i] for i in rows], sampling)
            keep = []
            for r, seq in enumerate(rows):
                ids, lps, _ = out[seq]
                ids.append(int(tokens[r]))
                lps.append(float(logprobs[r]))
                if ids[-1] in self.stop_ids:
                    out[seq] = (ids, lps, True)
                    continue
                tail = self.tokenizer.decode(ids[-_STOP_TAIL_TOKENS:])
                if len(ids) >= budgets[seq] or (
                    any(s in tail for s in stops[seq])
                    and segment_stopped(self.tokenizer.decode(ids), tail, stops[seq])
                ):
                    continue
                keep.append(r)
            if not keep:
                return out
            if len(keep) < len(rows):
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                attention, last_pos, tokens = attention[index], last_pos[index], tokens[index]
                rows = [rows[r] for r in keep]
            attention = torch.cat([attention, attention.new_ones((len(rows), 1))], dim=1)
            last_pos = last_pos + 1
            result = self.model(
                input_ids=tokens[:, None].to(device),
                attention_mask=attention,
                position_ids=last_pos[:, None],
                use_cache=True,
                **with_cache(self.model, cache),
            )
            logits = result.logits[:, -1, :]

    def _prefill_padded(self, input_ids, attention, positions):
        logits, layers = [], []
        for start in range(0, len(input_ids), _PREFILL_ROWS):
            part = slice(start, start + _PREFILL_ROWS)
            result = self.model(
                input_ids=input_ids[part],
                attention_mask=attention[part],
                position_ids=positions[part],
                use_cache=True,
                logits_to_keep=1,
            )
            logits.append(result.logits[:, -1, :])
            layers.append([(layer.keys, layer.values) for layer in returned_cache(result).layers])
        merged = [
            (torch.cat([c[i][0] for c in layers]), torch.cat([c[i][1] for c in layers]))
            for i in range(len(layers[0]))
        ]
        return torch.cat(logits), DynamicCache(ddp_cache_data=merged)


class ForcedTurns:
    """Mixin: a segment ends after `segment_tokens` tokens and, while searches remain, one
    that wrote no tag of its own counts as a search of the question."""

    segment_tokens = 40

    def _budget(self, trajectory):
        return min(super()._budget(trajectory), self.segment_tokens)

    def _after_segment(self, trajectory, ids, logprobs, ended_by_eos):
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        segment = parse_segment(text, ended_by_eos=ended_by_eos)
        room = trajectory.model_tokens + len(ids) < self.limits.max_new_tokens
        if segment.kind != "unfinished" or len(trajectory.searches) >= self.limits.max_turns:
            return super()._after_segment(trajectory, ids, logprobs, ended_by_eos)
        trajectory.append(ids, MODEL, logprobs)
        trajectory.text += text
        if room:
            self.run_search(trajectory, trajectory.question, self.limits.results_per_search)
        else:
            trajectory.finish_reason = "max_tokens"


class SyntheticIndex:
    """Used when no index exists: fixed chunks, so only the engine is measured."""

    def search(self, query: str, k: int = 5, question: str = ""):
        from engine.search.index import SearchHit

        text = "Purchases of property, plant and equipment were $1,577 million in 2018. " * 40
        return [SearchHit(f"c{i}", 1.0, "doc", i, "acme", text) for i in range(k)]


class TimedTool:
    def __init__(self, tool):
        self.tool, self.seconds = tool, 0.0

    def search(self, query, k=5, question=""):
        started = time.perf_counter()
        try:
            return self.tool.search(query, k=k, question=question)
        finally:
            self.seconds += time.perf_counter() - started


def matmul_peak(size: int = 1024, rounds: int = 30, dtype=torch.float32) -> float:
    """FLOP/s of the best of `rounds` square matmuls in `dtype`."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - started)
    return 2 * size**3 / best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--index", default=str(REPO / "var/fb-index"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--segment-tokens", type=int, default=40)
    parser.add_argument("--skip-old", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    if Path(args.index, "index.json").exists():
        from engine.search.index import SearchIndex

        tool, index_name = TimedTool(SearchIndex.load(args.index)), args.index
    else:
        tool, index_name = TimedTool(SyntheticIndex()), "synthetic"
    lines = (DATASET / "questions.jsonl").read_text().splitlines()
    picked = [json.loads(line)["question"] for line in lines[: args.questions]]
    questions = [q for q in picked for _ in range(args.group)]
    model, tokenizer = load_model("default")
    params = sum(p.numel() for p in model.parameters())
    embedding = model.get_input_embeddings().weight.numel()
    limits = Limits(max_turns=3, max_new_tokens=160, results_per_search=2, max_result_tokens=400)
    sampling = SamplingParams(temperature=0.7, top_p=1.0, seed=1234)

    model_bf16 = copy.deepcopy(model).to(torch.bfloat16)

    def engine(cls, weights):
        if args.segment_tokens:
            cls = type(f"Forced{cls.__name__}", (ForcedTurns, cls), {})
            cls.segment_tokens = args.segment_tokens
        return cls(weights, tokenizer, tool, limits=limits, batch_size=len(questions))

    forwarded = [0]
    for weights in (model, model_bf16):
        weights.register_forward_pre_hook(
            lambda _m, a, kw: forwarded.__setitem__(0, forwarded[0] + kw["input_ids"].numel()),
            with_kwargs=True,
        )

    def run(cls, weights):
        e = engine(cls, weights)
        e.rollout(questions[:2], SamplingParams(temperature=0.7, seed=0))  # warm-up
        tool.seconds, forwarded[0] = 0.0, 0
        started, cpu = time.perf_counter(), time.process_time()
        trajectories = e.rollout(questions, sampling)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        return trajectories, seconds, cpu, tool.seconds, forwarded[0]

    peaks = {"fp32": matmul_peak(), "bf16": matmul_peak(dtype=torch.bfloat16)}
    print(
        f"{len(questions)} trajectories ({args.questions} questions x {args.group}), "
        f"{args.threads} threads, index {index_name}, forced segments of "
        f"{args.segment_tokens or 'none'} tokens; matmul peak fp32 "
        f"{peaks['fp32'] / 1e9:.1f} GFLOP/s, bf16 {peaks['bf16'] / 1e9:.1f} GFLOP/s",
        flush=True,
    )

    results = {}
    engines = [
        ("new", HFRolloutEngine, model, "fp32"),
        ("new-bf16", HFRolloutEngine, model_bf16, "bf16"),
        ("old", ReprefillEngine, model, "fp32"),
    ]
    for name, cls, weights, dtype in engines:
        if name == "old" and args.skip_old:
            continue
        peak = peaks[dtype]
        trajectories, seconds, cpu, search_s, ran = run(cls, weights)
        generated = sum(t.model_tokens for t in trajectories)
        total = sum(len(t.token_ids) for t in trajectories)
        decode = generated - sum(1 for t in trajectories for _ in t.searches) - len(trajectories)
        rounds = max(len(t.searches) for t in trajectories) + 1
        results[name] = (trajectories, seconds, cpu)
        print(
            f"{name} engine: {generated} model tokens, {total} tokens in all, up to {rounds} "
            f"rounds, {seconds:.1f} s wall, {cpu:.1f} s CPU ({search_s:.1f} s searching), "
            f"{generated / seconds:.1f} tok/s; tokens run through the model: {ran}",
            flush=True,
        )
        useful = 2 * params * total / seconds
        strict = (2 * params * decode + 2 * (params - embedding) * (total - decode)) / seconds
        print(
            f"  useful FLOP/s {useful / 1e9:.1f} G = {useful / peak:.0%} of the {dtype} peak "
            f"(prefill without the embedding matrix: {strict / 1e9:.1f} G = {strict / peak:.0%})",
            flush=True,
        )
        # On a shared machine the wall clock counts other processes' time too: per second
        # of this process's CPU time, against the peak of the threads it ran.
        per_cpu = useful * seconds / cpu
        print(
            f"  per CPU-second: {per_cpu / 1e9:.1f} G = {per_cpu / (peak / args.threads):.0%} "
            f"of the one-thread share of the peak",
            flush=True,
        )
    if "old" in results:
        (old, old_s, old_cpu) = results["old"]
        old_rate = sum(t.model_tokens for t in old) / old_s
        for name in ("new", "new-bf16"):
            trajectories, seconds, cpu = results[name]
            rate = sum(t.model_tokens for t in trajectories) / seconds
            print(
                f"ratio {name}/old tok/s: {rate / old_rate:.2f}x "
                f"(wall {old_s / seconds:.2f}x, CPU time {old_cpu / cpu:.2f}x)"
            )
        (new, new_s, new_cpu) = results["new"]
        same = sum(a.token_ids == b.token_ids for a, b in zip(new, old, strict=True))
        drift = max(
            (
                abs(x - y)
                for a, b in zip(new, old, strict=True)
                if a.token_ids == b.token_ids
                for x, y in zip(a.logprobs, b.logprobs, strict=True)
            ),
            default=0.0,
        )
        print(
            f"new vs old, same tokens: {same}/{len(new)} trajectories; max log-prob gap {drift:.1e}"
        )


if __name__ == "__main__":
    main()
