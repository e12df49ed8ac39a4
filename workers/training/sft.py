"""Cold-start SFT: teach the student the protocol on correct teacher trajectories.

Plain next-token NLL on the teacher's (model-side) tokens only; the prompt and the tool's
results are context, never targets.
"""

import random
import time
from collections.abc import Callable, Sequence

import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from workers.agent.trajectory import Trajectory
from workers.training.batching import collate_packed, packed_micro_batches
from workers.training.logprobs import batch_logprobs


def sft(
    model: PreTrainedModel,
    trajectories: Sequence[Trajectory],
    *,
    epochs: int = 2,
    lr: float = 5e-5,
    max_batch_tokens: int = 4096,
    pad_id: int = 0,
    seed: int = 0,
    on_step: Callable[[dict], None] | None = None,
    progress: bool = False,
    deadline: float | None = None,
    precision: str = "float32",
    check: Callable[[], None] = lambda: None,
) -> list[float]:
    """Fine-tune `model` in place; returns the mean loss of each epoch. Stops early (after a
    micro-batch) once `time.monotonic()` passes `deadline`. `precision` as in
    `logprobs.token_logprobs`. `check()` runs before each micro-batch (a trainer's cancel
    check: it may raise to abandon the cold start)."""
    if not trajectories:
        return []
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    lengths = [len(t.token_ids) for t in trajectories]
    rng = random.Random(seed)
    model.train()
    epoch_losses = []
    batches = packed_micro_batches(range(len(trajectories)), lengths, max_batch_tokens)
    bar = tqdm(
        total=epochs * len(batches),
        desc="cold start SFT",
        unit="batch",
        disable=not progress,
        dynamic_ncols=True,
    )
    for epoch in range(epochs):
        rng.shuffle(batches)
        losses = []
        for rows in batches:
            if deadline is not None and time.monotonic() > deadline:
                break
            check()
            batch = collate_packed(
                [[trajectories[i] for i in row] for row in rows], pad_id=pad_id
            ).to(model.device)
            logp, _ = batch_logprobs(model, batch, precision=precision)
            loss = -(logp * batch.loss_mask).sum() / batch.loss_mask.sum().clamp(min=1)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            bar.update(1)
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.3f}")
            if on_step:
                on_step({"epoch": epoch, "loss": loss.item()})
        if not losses:
            break
        epoch_losses.append(sum(losses) / len(losses))
    bar.close()
    model.eval()
    return epoch_losses
