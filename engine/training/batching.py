"""Trajectories to tensors.

RL's update packs: several trajectories share a row, each counting its positions from 0,
and transformers keeps each one's attention to itself (it reads the restarts in
`position_ids`). Rows are as wide as the longest trajectory, so a short drill or a
trajectory that answered at once fills space that padding would waste. The cold start,
whose hundreds of trajectories come in a few lengths, groups them by length instead
(`length_grouped_micro_batches`): no row is padded by more than a few tokens, and attention
runs over one trajectory, not a whole row. `collate` (one right-padded trajectory per row)
stays for the benchmark's baseline and for tests.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from engine.agent.trajectory import Trajectory


@dataclass
class TokenBatch:
    input_ids: torch.Tensor  # [B, T]
    attention_mask: torch.Tensor  # [B, T], 1 on real tokens
    loss_mask: torch.Tensor  # [B, T], 1 on model tokens (never prompt or tool output)
    rollout_logp: torch.Tensor  # [B, T], the rollout engine's log-probs (0 elsewhere)
    advantages: torch.Tensor  # [B, T], the trajectory's advantage on each of its tokens
    position_ids: torch.Tensor | None = None  # [B, T] when packed: restarts at each trajectory

    def to(self, device) -> "TokenBatch":
        """The batch on `device` (the model's): batches are built on the CPU."""
        moved = {
            name: None if value is None else value.to(device) for name, value in vars(self).items()
        }
        return TokenBatch(**moved)

    @property
    def model_tokens(self) -> int:
        return int((self.loss_mask > 0).sum())

    @property
    def tokens(self) -> int:
        return int(self.attention_mask.sum())


def collate(
    trajectories: Sequence[Trajectory], advantages: Sequence[float] | None = None, pad_id: int = 0
) -> TokenBatch:
    """One right-padded trajectory per row, read through an attention mask (no positions):
    the plain way, for the benchmark's baseline and as the reference packing is tested on."""
    rows = [[t] for t in trajectories]
    per_row = None if advantages is None else [[a] for a in advantages]
    return replace(collate_packed(rows, per_row, pad_id), position_ids=None)


def pack(items: Sequence[int], lengths: Sequence[int], width: int) -> list[list[int]]:
    """Rows of item indices whose lengths add up to at most `width` (first fit, longest
    first: near-optimal for this and simple)."""
    rows: list[list[int]] = []
    room: list[int] = []
    for i in sorted(items, key=lambda i: -lengths[i]):
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(width - lengths[i])
    return rows


def packed_micro_batches(
    items: Sequence[int], lengths: Sequence[int], max_tokens: int
) -> list[list[list[int]]]:
    """Micro-batches of packed rows: rows as wide as the longest item, as many rows per
    micro-batch as `max_tokens` allows (at least one)."""
    if not items:
        return []
    width = max(lengths[i] for i in items)
    rows = pack(items, lengths, width)
    per_batch = max(1, max_tokens // width)
    return [rows[i : i + per_batch] for i in range(0, len(rows), per_batch)]


def length_grouped_micro_batches(
    items: Sequence[int], lengths: Sequence[int], max_tokens: int
) -> list[list[list[int]]]:
    """Micro-batches of one item a row, longest first: each batch takes the next items in
    that order, as many as `max_tokens` allows at its first (widest) item's length (at least
    one), so its rows differ by a few tokens. Shaped like `packed_micro_batches`' (rows of
    item indices) for `collate_packed`.

    On the cold start's set (1,244 trajectories of 200 to 1,240 tokens, in three clumps:
    first-search drills, one search, two searches) packed rows, collated to their batch's
    widest, were 1.2 % padding, but a drill attended over its whole row; grouped so, 1.06–1.13×
    the trajectories a minute (`bench/cold_start_batching.py`), and the preset's timed
    cold start got through 0.55 of an epoch instead of 0.50 on a float32 CPU
    (docs/results/cpu-45min-runs.md). One trajectory a row is also what lets
    `logprobs.token_logprobs` run the rows' shared system prompt once."""
    order = sorted(items, key=lambda i: -lengths[i])
    batches, start = [], 0
    while start < len(order):
        per_batch = max(1, max_tokens // max(1, lengths[order[start]]))
        batches.append([[i] for i in order[start : start + per_batch]])
        start += per_batch
    return batches


def collate_packed(
    rows: Sequence[Sequence[Trajectory]],
    advantages: Sequence[Sequence[float]] | None = None,
    pad_id: int = 0,
    answer_weight: float = 1.0,
) -> TokenBatch:
    """One row per group of trajectories, laid end to end. The tail of a shorter row is
    padding with its own positions from 0: a sequence of its own that nothing attends to.
    The loss mask weighs the answer's tokens `answer_weight` (`Trajectory.answer_mask`)."""
    width = max(sum(len(t.token_ids) for t in row) for row in rows)
    shape = (len(rows), width)
    input_ids = torch.full(shape, pad_id, dtype=torch.long)
    attention = torch.zeros(shape, dtype=torch.long)
    positions = torch.zeros(shape, dtype=torch.long)
    loss_mask = torch.zeros(shape, dtype=torch.float32)
    rollout_logp = torch.zeros(shape, dtype=torch.float32)
    per_token_adv = torch.zeros(shape, dtype=torch.float32)
    for r, row in enumerate(rows):
        start = 0
        for k, trajectory in enumerate(row):
            n = len(trajectory.token_ids)
            span = slice(start, start + n)
            input_ids[r, span] = torch.tensor(trajectory.token_ids)
            attention[r, span] = 1
            positions[r, span] = torch.arange(n)
            loss_mask[r, span] = torch.tensor(trajectory.loss_mask, dtype=torch.float32)
            if answer_weight != 1.0:
                answer = torch.tensor(trajectory.answer_mask, dtype=torch.bool)
                loss_mask[r, start : start + n][answer] = answer_weight
            rollout_logp[r, span] = torch.tensor(trajectory.logprobs, dtype=torch.float32)
            if advantages is not None:
                per_token_adv[r, span] = advantages[r][k]
            start += n
        positions[r, start:] = torch.arange(width - start)
    return TokenBatch(input_ids, attention, loss_mask, rollout_logp, per_token_adv, positions)
