"""Micro-batches: several trajectories packed in a row, or rows run from one shared prompt,
must train exactly as one trajectory a row."""

import torch

from engine.training.batching import (
    collate,
    collate_packed,
    length_grouped_micro_batches,
    pack,
    packed_micro_batches,
)
from engine.training.logprobs import batch_logprobs, shared_prefix_length, token_logprobs
from tests.helpers.packing import SYSTEM, tiny_model, trajectory


def test_pack_fills_rows_up_to_the_width_and_keeps_every_item_once():
    lengths = [10, 3, 7, 2, 5, 10, 1]
    rows = pack(range(len(lengths)), lengths, width=10)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))
    assert all(sum(lengths[i] for i in row) <= 10 for row in rows)
    assert len(rows) == 4  # 38 tokens need at least 4 rows of 10
    batches = packed_micro_batches(range(len(lengths)), lengths, max_tokens=25)
    assert [len(b) for b in batches] == [2, 2]  # two rows of 10 per 25 tokens
    assert packed_micro_batches([], lengths, 25) == []


def test_length_groups_keep_every_item_once_one_a_row_within_the_token_budget():
    lengths = [3, 9, 4, 9, 1, 8, 2, 30, 7]
    batches = length_grouped_micro_batches(range(len(lengths)), lengths, max_tokens=20)
    assert all(len(row) == 1 for rows in batches for row in rows)
    order = [row[0] for rows in batches for row in rows]
    assert sorted(order) == list(range(len(lengths)))
    assert [lengths[i] for i in order] == sorted(lengths, reverse=True)  # longest first
    assert batches[0] == [[7]]  # wider than the budget: alone
    for rows in batches[1:]:
        width = lengths[rows[0][0]]
        assert len(rows) * width <= 20  # as wide as its first row, within the budget
    # Each batch holds as many as fit at its width: [9, 9], [8, 7], [4, 3, 2, 1].
    assert [len(rows) for rows in batches] == [1, 2, 2, 4]
    assert length_grouped_micro_batches([], lengths, 20) == []


def test_length_groups_pad_a_clumpy_set_less_than_packed_rows():
    # The cold start's shape: short drills, one-search and two-search trajectories.
    lengths = [25] * 30 + [65] * 50 + [100, 124] * 15
    items = range(len(lengths))

    def computed(batches):
        return sum(len(rows) * max(lengths[i] for row in rows for i in row) for rows in batches)

    grouped = computed(length_grouped_micro_batches(items, lengths, 400))
    packed = sum(len(rows) * max(lengths) for rows in packed_micro_batches(items, lengths, 400))
    assert grouped < 0.9 * packed
    assert grouped - sum(lengths) < 0.05 * sum(lengths)


def test_packed_rows_give_each_trajectory_the_log_probs_it_has_alone():
    model = tiny_model()
    trajectories = [trajectory(0, 11, 6, 4), trajectory(1, 5, 3, 2), trajectory(2, 7, 0, 3)]
    alone = collate(trajectories)
    expected, _ = batch_logprobs(model, alone)

    packed = collate_packed([[trajectories[1], trajectories[2]], [trajectories[0]]])
    assert packed.input_ids.shape == (2, len(trajectories[0].token_ids))
    got, _ = batch_logprobs(model, packed)
    n1, n2 = len(trajectories[1].token_ids), len(trajectories[2].token_ids)
    first, second = got[0, :n1], got[0, n1 : n1 + n2]
    assert torch.allclose(first, expected[1, :n1], atol=1e-5)
    # The second trajectory of a row sees nothing of the first: same values as alone.
    assert torch.allclose(second, expected[2, :n2], atol=1e-5)
    assert torch.allclose(got[1], expected[0], atol=1e-5)
    assert packed.model_tokens == alone.model_tokens
    # A row's padded tail changes nothing either.
    padded = collate_packed([[trajectories[1]], [trajectories[0]]])
    got, _ = batch_logprobs(model, padded)
    assert torch.allclose(got[0, :n1], expected[1, :n1], atol=1e-5)
    assert packed.tokens == alone.tokens


def test_without_the_position_restarts_the_second_trajectory_would_differ():
    """The check above can fail: laid end to end with one running position (and so one
    causal attention span), the second trajectory's log-probs change."""
    model = tiny_model()
    a, b = trajectory(1, 5, 3, 2), trajectory(2, 7, 0, 3)
    packed = collate_packed([[a, b]])
    running = torch.arange(packed.input_ids.shape[1]).unsqueeze(0)
    got, _ = token_logprobs(
        model, packed.input_ids, packed.attention_mask, packed.loss_mask, position_ids=running
    )
    alone = collate([b])
    expected, _ = batch_logprobs(model, alone)
    n = len(a.token_ids)
    assert not torch.allclose(got[0, n:], expected[0], atol=1e-5)


def test_rows_that_share_a_system_prompt_run_it_once_with_the_same_log_probs_and_gradients():
    model = tiny_model().train()
    trajectories = [trajectory(seed, 3 + seed, 2 * seed, 2 + seed, SYSTEM) for seed in range(4)]
    batch = collate_packed([[t] for t in trajectories])  # the cold start's rows
    assert shared_prefix_length(
        batch.input_ids, batch.attention_mask, batch.loss_mask, batch.position_ids
    ) == len(SYSTEM)

    def logprobs_and_gradients(batch, **options):
        model.zero_grad()
        logp, _ = batch_logprobs(model, batch, **options)
        (logp * batch.loss_mask).sum().backward()
        return logp, [p.grad.clone() for p in model.parameters()]

    shared, shared_grads = logprobs_and_gradients(batch)
    whole, whole_grads = logprobs_and_gradients(batch, share_prefix=False)
    assert torch.allclose(shared, whole, atol=1e-5)
    assert all(
        torch.allclose(a, b, atol=1e-5) for a, b in zip(shared_grads, whole_grads, strict=True)
    )
    for row, t in enumerate(trajectories):  # and each row as it is alone
        alone, _ = batch_logprobs(model, collate([t]))
        n = len(t.token_ids)
        assert torch.allclose(shared[row, :n], alone[0], atol=1e-5)


def test_the_shared_prefix_stops_before_the_first_target_and_never_spans_packed_rows():
    first_target = len(SYSTEM) + 3  # the first model token of trajectory(0, 3, …)
    a, b = trajectory(0, 3, 4, 2, SYSTEM), trajectory(0, 3, 5, 2, SYSTEM)  # alike up to a's tool
    rows = collate_packed([[a], [b]])

    def length(batch):
        return shared_prefix_length(
            batch.input_ids, batch.attention_mask, batch.loss_mask, batch.position_ids
        )

    # The last shared token's hidden state predicts the first target: computed per row.
    assert length(rows) == first_target - 1
    assert length(collate([a, b])) == first_target - 1  # unpacked rows alike
    assert length(collate_packed([[a]])) == 0  # one row: nothing to share
    assert length(collate([a, trajectory(1, 3, 4, 2)])) == 0  # different from the first token
    # Rows packing several trajectories start alike but restart their positions: left alone.
    c = trajectory(2, 3, 1, 2, SYSTEM)
    assert length(collate_packed([[a, c], [b]])) == 0


def test_packed_advantages_follow_their_trajectory():
    a, b = trajectory(1, 5, 3, 2), trajectory(2, 7, 0, 3)
    packed = collate_packed([[a, b]], [[0.5, -2.0]])
    n = len(a.token_ids)
    assert set(packed.advantages[0, :n].tolist()) == {0.5}
    assert set(packed.advantages[0, n:].tolist()) == {-2.0}
    assert packed.position_ids[0, n].item() == 0


def test_a_batch_moves_whole_to_the_models_device():
    a, b = trajectory(1, 5, 3, 2), trajectory(2, 7, 0, 3)
    batch = collate_packed([[a, b]], [[0.5, -2.0]])

    moved = batch.to("meta")  # a GPU trainer moves each batch to its model's device

    assert {t.device.type for t in vars(moved).values()} == {"meta"}
    assert collate([a]).to("meta").position_ids is None  # absent stays absent
