"""Trajectories to tensors: right-padded token batches, grouped by length to save padding."""

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from workers.agent.trajectory import Trajectory


@dataclass
class TokenBatch:
    input_ids: torch.Tensor  # [B, T]
    attention_mask: torch.Tensor  # [B, T], 1 on real tokens
    loss_mask: torch.Tensor  # [B, T], 1 on model tokens (never prompt or tool output)
    rollout_logp: torch.Tensor  # [B, T], the rollout engine's log-probs (0 elsewhere)
    advantages: torch.Tensor  # [B, T], the trajectory's advantage on each of its tokens

    @property
    def model_tokens(self) -> int:
        return int(self.loss_mask.sum())

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())


def collate(
    trajectories: Sequence[Trajectory], advantages: Sequence[float] | None = None, pad_id: int = 0
) -> TokenBatch:
    width = max(len(t.token_ids) for t in trajectories)
    rows = len(trajectories)
    input_ids = torch.full((rows, width), pad_id, dtype=torch.long)
    attention = torch.zeros((rows, width), dtype=torch.long)
    loss_mask = torch.zeros((rows, width), dtype=torch.float32)
    rollout_logp = torch.zeros((rows, width), dtype=torch.float32)
    per_token_adv = torch.zeros((rows, width), dtype=torch.float32)
    for row, trajectory in enumerate(trajectories):
        n = len(trajectory.token_ids)
        input_ids[row, :n] = torch.tensor(trajectory.token_ids)
        attention[row, :n] = 1
        loss_mask[row, :n] = torch.tensor(trajectory.loss_mask, dtype=torch.float32)
        rollout_logp[row, :n] = torch.tensor(trajectory.logprobs, dtype=torch.float32)
        if advantages is not None:
            per_token_adv[row, :n] = advantages[row]
    return TokenBatch(input_ids, attention, loss_mask, rollout_logp, per_token_adv)


def micro_batches(items: Sequence[int], lengths: Sequence[int], max_tokens: int) -> list[list[int]]:
    """Split item indices into micro-batches of at most `max_tokens` padded tokens each,
    after sorting by length so sequences of a micro-batch have similar lengths."""
    order = sorted(items, key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        width = max([lengths[j] for j in current] + [lengths[i]])
        if current and width * (len(current) + 1) > max_tokens:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches
