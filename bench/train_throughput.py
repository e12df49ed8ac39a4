"""Training throughput: the trainer's loss path against a naive full-logits step, same batch.

Both do forward, backward and an AdamW step on a SmolLM2-135M-shaped model (random
weights: speed does not depend on them) over the same trajectories, of mixed lengths as
rollouts are (some answer at once, some search twice), where a quarter of each one's tokens
are model tokens (the rest prompt and tool output). The real path packs trajectories into
rows and runs the LM head only where the loss looks; the naive step pads one trajectory per
row and computes logits everywhere. Reported: tokens/s of each (real tokens, padding not
counted), their ratio, and each as a share of this machine's fp32 matmul peak, measured in
the same run. A third row runs the real path under bfloat16 autocast (`precision`
"bfloat16": float32 master weights and optimizer), against the bfloat16 matmul peak.

Two utilization figures:
  model FLOPs  the useful work, 6·N per real token with the LM head at every position plus
               causal attention within each trajectory (MFU): "how fast, compared with the
               plain way at full efficiency".
  done FLOPs   what the real path actually computes (LM head only at model tokens,
               attention over whole packed rows).

    .venv/bin/python bench/train_throughput.py [--trajectories 12 --min-length 128
        --max-length 512 --repeats 3]
"""

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from engine.agent.trajectory import MODEL, PROMPT, Trajectory
from engine.training.batching import collate, collate_packed, pack
from engine.training.config import LossConfig
from engine.training.logprobs import batch_logprobs, full_logits_logprobs
from engine.training.losses import policy_loss

SMOLLM2_135M = dict(
    vocab_size=49152,
    hidden_size=576,
    intermediate_size=1536,
    num_hidden_layers=30,
    num_attention_heads=9,
    num_key_value_heads=3,
    max_position_embeddings=8192,
    tie_word_embeddings=True,
    rms_norm_eps=1e-5,
)


def matmul_peak(
    size: int = 2048, seconds: float = 1.0, rounds: int = 3, dtype=torch.float32
) -> float:
    """GFLOP/s of large square matmuls in `dtype`, the best of a few rounds (a busy
    neighbour only ever lowers a round): the ceiling a training step can reach here."""
    a, b = torch.randn(size, size, dtype=dtype), torch.randn(size, size, dtype=dtype)
    torch.mm(a, b)
    best = 0.0
    for _ in range(rounds):
        runs, started = 0, time.perf_counter()
        while time.perf_counter() - started < seconds:
            torch.mm(a, b)
            runs += 1
        best = max(best, 2 * size**3 * runs / (time.perf_counter() - started) / 1e9)
    return best


def step_real(model, optimizer, trajectories, precision="float32"):
    batch = collate_packed([[trajectories[i] for i in row] for row in trajectories.rows])
    logp, _ = batch_logprobs(model, batch, precision=precision)
    advantages = torch.ones_like(logp)
    loss, _ = policy_loss(
        logp, batch.rollout_logp, advantages, batch.loss_mask, LossConfig(kind="dppo_tv")
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def step_real_bf16(model, optimizer, trajectories):
    step_real(model, optimizer, trajectories, precision="bfloat16")


def step_naive(model, optimizer, trajectories):
    batch = collate(list(trajectories))
    logp = full_logits_logprobs(model, batch.input_ids, batch.attention_mask)
    advantages = torch.ones_like(logp)
    loss, _ = policy_loss(
        logp, batch.rollout_logp, advantages, batch.loss_mask, LossConfig(kind="dppo_tv")
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


class Trajectories(list):
    """Trajectories, and the rows the trainer packs them into."""

    rows: list[list[int]]


def make_trajectories(n: int, low: int, high: int, model_share: float, vocab: int):
    lengths = torch.linspace(low, high, n).round().long().tolist()
    trajectories = Trajectories()
    for length in lengths:
        t = Trajectory(question="q", model_name="bench")
        answer = int(length * model_share)
        t.append(torch.randint(0, vocab, (length - answer,)).tolist(), PROMPT)
        t.append(torch.randint(0, vocab, (answer,)).tolist(), MODEL, [-1.0] * answer)
        trajectories.append(t)
    trajectories.rows = pack(range(n), lengths, max(lengths))
    return trajectories


def timed(step, model, batch, repeats: int) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    step(model, optimizer, batch)  # warm-up: allocations, optimizer state
    started = time.perf_counter()
    for _ in range(repeats):
        step(model, optimizer, batch)
    return (time.perf_counter() - started) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=12)
    parser.add_argument("--min-length", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=512)
    parser.add_argument("--model-share", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)

    peak = matmul_peak()
    config = LlamaConfig(**SMOLLM2_135M)
    model = LlamaForCausalLM(config)
    trajectories = make_trajectories(
        args.trajectories, args.min_length, args.max_length, args.model_share, config.vocab_size
    )
    lengths = [len(t.token_ids) for t in trajectories]
    tokens, model_tokens = sum(lengths), sum(t.model_tokens for t in trajectories)
    width, rows = max(lengths), len(trajectories.rows)

    naive_s = timed(step_naive, model, trajectories, args.repeats)
    real_s = timed(step_real, model, trajectories, args.repeats)
    bf16_s = timed(step_real_bf16, model, trajectories, args.repeats)
    peak = max(peak, matmul_peak())  # before and after: the steps ran between the two
    bf16_peak = matmul_peak(dtype=torch.bfloat16)

    head = config.vocab_size * config.hidden_size
    body = sum(p.numel() for p in model.parameters()) - head  # tied: the head is the embedding
    per_attention = 6 * 2 * config.num_hidden_layers * config.hidden_size  # QK^T and AV
    useful_attention = per_attention * sum(n * n for n in lengths) / 2  # causal, per trajectory
    model_flops = 6 * (body + head) * tokens + useful_attention
    done_flops = (
        6 * body * rows * width + 6 * head * model_tokens + per_attention * rows * width * width
    )

    def row(name, seconds, flops=None, peak=peak):
        done = (
            f"   {flops / seconds / 1e9:6.1f} GFLOP/s done ({flops / seconds / 1e9 / peak:5.1%})"
            if flops
            else ""
        )
        return (
            f"{name:<28} {tokens / seconds:8.0f} tok/s   {seconds:6.2f} s/step   "
            f"{model_flops / seconds / 1e9:6.1f} GFLOP/s model "
            f"({model_flops / seconds / 1e9 / peak:5.1%} of peak){done}"
        )

    print(
        f"matmul peak here: fp32 {peak:.1f} GFLOP/s, bf16 {bf16_peak:.1f} GFLOP/s "
        f"({torch.get_num_threads()} threads)"
    )
    print(
        f"batch: {len(lengths)} trajectories of {min(lengths)}–{width} tokens, {tokens} tokens, "
        f"{model_tokens} model tokens ({args.model_share:.0%}); naive: {len(lengths)} padded "
        f"rows × {width} ({len(lengths) * width - tokens} padding), packed: {rows} rows × "
        f"{width} ({rows * width - tokens} padding); SmolLM2-135M shape, {body / 1e6:.0f}M "
        f"body + {head / 1e6:.0f}M head parameters"
    )
    print(row("naive (padded, full logits)", naive_s))
    print(row("sleuth loss path (packed)", real_s, done_flops))
    print(row("the same, bf16 autocast", bf16_s, done_flops, peak=bf16_peak) + " (bf16 peak)")
    print(f"speed-up: {naive_s / real_s:.2f}× tokens/s over the naive step")
    print(f"bf16 autocast: {real_s / bf16_s:.2f}× the float32 loss path")


if __name__ == "__main__":
    main()
