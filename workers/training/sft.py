"""Cold-start SFT: teach the student the protocol on correct teacher trajectories.

Plain next-token NLL on the teacher's (model-side) tokens only; the prompt and the tool's
results are context, never targets.
"""

import random
from collections.abc import Callable, Sequence
from time import monotonic

import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from workers.agent.trajectory import Trajectory
from workers.training.batching import collate_packed, length_grouped_micro_batches
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
    warmdown: float = 0.0,
    answer_weight: float = 1.0,
) -> list[float]:
    """Fine-tune `model` in place; returns the mean loss of each epoch. Stops early (after a
    micro-batch) once `time.monotonic()` passes `deadline`. `precision` as in
    `logprobs.token_logprobs`. `check()` runs before each micro-batch (a trainer's cancel
    check: it may raise to abandon the cold start). Over the last `warmdown` share of the
    cold start the learning rate falls linearly towards zero (`warmdown_factor`). An
    answer's tokens weigh `answer_weight` in the loss, a search's 1 (the sum is divided by
    the count of model tokens, whatever their weights): the update leans towards answering."""
    if not trajectories:
        return []
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    started = monotonic()
    lengths = [len(t.token_ids) for t in trajectories]
    rng = random.Random(seed)
    model.train()
    epoch_losses = []
    batches = length_grouped_micro_batches(range(len(trajectories)), lengths, max_batch_tokens)
    bar = tqdm(
        total=epochs * len(batches),
        desc="cold start SFT",
        unit="batch",
        disable=not progress,
        dynamic_ncols=True,
    )
    done = 0
    for epoch in range(epochs):
        rng.shuffle(batches)
        losses = []
        for rows in batches:
            now = monotonic()
            if deadline is not None and now > deadline:
                break
            check()
            # Whichever runs out first, the epochs or the time: a timed cold start ends
            # mid-epoch, and should end there at a low rate, not at the full one.
            progress = done / bar.total
            if deadline is not None:
                progress = max(progress, (now - started) / max(deadline - started, 1e-9))
            for group in optimizer.param_groups:
                group["lr"] = lr * warmdown_factor(progress, warmdown)
            batch = collate_packed(
                [[trajectories[i] for i in row] for row in rows],
                pad_id=pad_id,
                answer_weight=answer_weight,
            ).to(model.device)
            logp, _ = batch_logprobs(model, batch, precision=precision)
            targets = (batch.loss_mask > 0).sum().clamp(min=1)
            loss = -(logp * batch.loss_mask).sum() / targets
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            done += 1
            bar.update(1)
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.3f}")
            if on_step:
                on_step(
                    {
                        "epoch": epoch,
                        "loss": loss.item(),
                        "lr": optimizer.param_groups[0]["lr"],
                        "trajectories": len(rows),
                    }
                )
        if not losses:
            break
        epoch_losses.append(sum(losses) / len(losses))
    bar.close()
    model.eval()
    return epoch_losses


def warmdown_factor(progress: float, warmdown: float) -> float:
    """The learning rate's multiplier at `progress` (0 to 1) through a run whose last
    `warmdown` share decays it linearly: 1 before, 1 − (progress − start) / warmdown after."""
    if warmdown <= 0:
        return 1.0
    start = 1.0 - warmdown
    return max(0.0, min(1.0, 1.0 - (progress - start) / warmdown))
