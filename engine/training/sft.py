"""Cold-start SFT: teach the student the protocol on correct teacher trajectories.

Plain next-token NLL on the teacher's (model-side) tokens only; the prompt and the tool's
results are context, never targets. In a data-parallel run (`training.distributed`) each
rank takes its share of a micro-batch's rows, the loss the mean over all their target
tokens: the same steps as one process takes, whatever the count of ranks.
"""

import random
from collections.abc import Callable, Sequence
from time import monotonic

import torch
from tqdm import tqdm
from transformers import PreTrainedModel

from engine.agent.trajectory import Trajectory
from engine.training.batching import collate_packed, length_grouped_micro_batches
from engine.training.distributed import SINGLE, Ranks
from engine.training.logprobs import batch_logprobs


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
    ranks: Ranks = SINGLE,
) -> list[float]:
    """Fine-tune `model` in place; returns the mean loss of each epoch. Stops early (after a
    micro-batch) once `time.monotonic()` passes `deadline`. `precision` as in
    `logprobs.token_logprobs`. `check()` runs before each micro-batch (a trainer's cancel
    check: it may raise to abandon the cold start). Over the last `warmdown` share of the
    cold start the learning rate falls linearly towards zero (`warmdown_factor`). An
    answer's tokens weigh `answer_weight` in the loss, a search's 1 (the sum is divided by
    the count of model tokens, whatever their weights): the update leans towards answering.
    With several `ranks`, every rank shuffles the same order and runs its share of each
    micro-batch's rows."""
    if not trajectories:
        return []
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr)
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
        disable=not progress or not ranks.main,
        dynamic_ncols=True,
    )
    done = 0
    for epoch in range(epochs):
        rng.shuffle(batches)
        losses = []
        for rows in batches:
            now = monotonic()
            if ranks.any(deadline is not None and now > deadline):
                break
            check()
            # Whichever runs out first, the epochs or the time: a timed cold start ends
            # mid-epoch, and should end there at a low rate, not at the full one. Every rank
            # steps at the rate of the one furthest on.
            progress = done / bar.total
            if deadline is not None:
                progress = max(progress, (now - started) / max(deadline - started, 1e-9))
            (progress,) = ranks.highest(progress)
            for group in optimizer.param_groups:
                group["lr"] = lr * warmdown_factor(progress, warmdown)
            mine = [rows[i] for i in ranks.share(len(rows))]
            optimizer.zero_grad(set_to_none=True)
            nll, local_targets = 0.0, 0
            if mine:
                batch = collate_packed(
                    [[trajectories[i] for i in row] for row in mine],
                    pad_id=pad_id,
                    answer_weight=answer_weight,
                ).to(model.device)
                local_targets = int((batch.loss_mask > 0).sum())
            (targets,) = ranks.total(local_targets)
            if mine:
                logp, _ = batch_logprobs(model, batch, precision=precision)
                batch_nll = -(logp * batch.loss_mask).sum()
                (batch_nll / max(targets, 1)).backward()
                nll = batch_nll.item()
            ranks.sum_gradients(trainable)
            torch.nn.utils.clip_grad_norm_(trainable, 1.0)
            optimizer.step()
            (nll,) = ranks.total(nll)
            loss = nll / max(targets, 1)
            losses.append(loss)
            done += 1
            bar.update(1)
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss:.3f}")
            if on_step:
                on_step(
                    {
                        "epoch": epoch,
                        "loss": loss,
                        "lr": optimizer.param_groups[0]["lr"],
                        "trajectories": sum(len(row) for row in rows),
                    }
                )
        if not losses:
            break
        epoch_losses.append(sum(losses) / len(losses))
    bar.close()
    # The last micro-batch's gradient must not ride into whatever trains the model next (RL's
    # first step accumulates onto .grad).
    optimizer.zero_grad(set_to_none=True)
    model.eval()
    return epoch_losses


def warmdown_factor(progress: float, warmdown: float) -> float:
    """The learning rate's multiplier at `progress` (0 to 1) through a run whose last
    `warmdown` share decays it linearly: 1 before, 1 − (progress − start) / warmdown after."""
    if warmdown <= 0:
        return 1.0
    start = 1.0 - warmdown
    return max(0.0, min(1.0, 1.0 - (progress - start) / warmdown))
