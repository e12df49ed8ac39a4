"""Training throughput: the trainer's loss path against a naive full-logits step, same batch.

Both do forward, backward and an AdamW step on a SmolLM2-135M-shaped model (random
weights: speed does not depend on them) over the same batch of trajectories, where a
quarter of the tokens are model tokens (the rest prompt and tool output, as in real
rollouts). Reported: tokens/s of each, their ratio, and each as a share of this machine's
fp32 matmul peak, measured in the same run.

Two utilization figures, because the real path skips work:
  model FLOPs  6·N·T for the whole model (LM head at every position, as the naive step
               computes it): "how fast, compared with doing it the plain way".
  done FLOPs   what the real path actually computes (LM head only at model tokens).

    .venv/bin/python bench/train_throughput.py [--rows 4 --length 512 --repeats 3]
"""

import argparse
import time

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from workers.training.logprobs import full_logits_logprobs, token_logprobs
from workers.training.losses import LossConfig, policy_loss

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


def matmul_peak(size: int = 2048, seconds: float = 3.0) -> float:
    """fp32 GFLOP/s of large square matmuls: the ceiling a training step can reach here."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    runs, started = 0, time.perf_counter()
    while time.perf_counter() - started < seconds:
        torch.mm(a, b)
        runs += 1
    return 2 * size**3 * runs / (time.perf_counter() - started) / 1e9


def step_real(model, optimizer, batch):
    ids, attention, mask, rollout_logp, advantages = batch
    logp, _ = token_logprobs(model, ids, attention, mask)
    loss, _ = policy_loss(logp, rollout_logp, advantages, mask, LossConfig(kind="dppo_tv"))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def step_naive(model, optimizer, batch):
    ids, attention, mask, rollout_logp, advantages = batch
    logp = full_logits_logprobs(model, ids, attention)
    loss, _ = policy_loss(logp, rollout_logp, advantages, mask, LossConfig(kind="dppo_tv"))
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def timed(step, model, batch, repeats: int) -> float:
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    step(model, optimizer, batch)  # warm-up: allocations, optimizer state
    started = time.perf_counter()
    for _ in range(repeats):
        step(model, optimizer, batch)
    return (time.perf_counter() - started) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4)
    parser.add_argument("--length", type=int, default=512)
    parser.add_argument("--model-share", type=float, default=0.25)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.manual_seed(0)

    peak = matmul_peak()
    config = LlamaConfig(**SMOLLM2_135M)
    model = LlamaForCausalLM(config)
    rows, length = args.rows, args.length
    ids = torch.randint(0, config.vocab_size, (rows, length))
    attention = torch.ones_like(ids)
    mask = torch.zeros(rows, length)
    mask[:, int(length * (1 - args.model_share)) :] = 1  # the answer side of each trajectory
    batch = (ids, attention, mask, torch.full((rows, length), -1.0), torch.ones(rows, length))
    tokens = rows * length
    model_tokens = int(mask.sum())

    naive_s = timed(step_naive, model, batch, args.repeats)
    real_s = timed(step_real, model, batch, args.repeats)

    head = config.vocab_size * config.hidden_size
    body = sum(p.numel() for p in model.parameters()) - head  # tied: the head is the embedding
    layers, hidden = config.num_hidden_layers, config.hidden_size
    attention_flops = 6 * 2 * layers * hidden * length * tokens / 2  # causal QK^T and AV
    model_flops = 6 * (body + head) * tokens + attention_flops
    done_flops = 6 * body * tokens + 6 * head * model_tokens + attention_flops

    def row(name, seconds, flops):
        return (
            f"{name:<28} {tokens / seconds:8.0f} tok/s   {seconds:6.2f} s/step   "
            f"{model_flops / seconds / 1e9:6.1f} GFLOP/s model "
            f"({model_flops / seconds / 1e9 / peak:5.1%} of peak)   "
            f"{flops / seconds / 1e9:6.1f} GFLOP/s done ({flops / seconds / 1e9 / peak:5.1%})"
        )

    print(f"fp32 matmul peak here: {peak:.1f} GFLOP/s ({torch.get_num_threads()} threads)")
    print(
        f"batch: {rows} × {length} tokens, {model_tokens} model tokens "
        f"({args.model_share:.0%}); SmolLM2-135M shape, {body / 1e6:.0f}M body + "
        f"{head / 1e6:.0f}M head parameters"
    )
    print(row("naive (full logits)", naive_s, model_flops))
    print(row("sleuth loss path", real_s, done_flops))
    print(f"speed-up: {naive_s / real_s:.2f}× tokens/s over the naive step")


if __name__ == "__main__":
    main()
