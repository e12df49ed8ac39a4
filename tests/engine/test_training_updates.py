"""Several optimizer steps on each batch of rollouts (`updates_per_step`): the step's metrics
stay the first, on-policy update's, the last update's trust region is logged beside them, and
the extra updates move the weights further from the same rollouts."""

import pytest

from engine.training import rl
from tests.helpers.toy import config, run_training, tiny_model, tiny_tokenizer


def rewards_with_signal(monkeypatch):
    """In every group one rollout scores above the other: every step has something to learn."""
    real = rl.score

    def score(trajectories, questions, cfg, judge):
        rewards = real(trajectories, questions, cfg, judge)
        for row, reward in enumerate(rewards):
            reward["total"] = float(row % 2)
        return rewards

    monkeypatch.setattr(rl, "score", score)


def trained(tmp_path, name, updates_per_step):
    model = tiny_model(tiny_tokenizer(), 0)
    cfg = config(steps=2, questions_per_step=2, group_size=2, updates_per_step=updates_per_step)
    _, metrics = run_training(tmp_path, cfg, name=name, model=model)
    return model, metrics


def test_more_updates_per_batch_move_the_weights_further_from_the_same_rollouts(
    tmp_path, monkeypatch
):
    rewards_with_signal(monkeypatch)
    once, once_metrics = trained(tmp_path, "once", 1)
    thrice, thrice_metrics = trained(tmp_path, "thrice", 3)

    # The same first batch, and the step's metrics are its first, on-policy update's.
    first, first_of_three = once_metrics[0], thrice_metrics[0]
    assert first["reward/total"] == first_of_three["reward/total"]
    assert first["mismatch_abs"] == first_of_three["mismatch_abs"]
    assert "updates" not in first
    assert first_of_three["updates"] == 3
    # By the third update π has moved from the μ the batch was sampled with.
    assert first_of_three["last_update/mismatch_abs"] > first_of_three["mismatch_abs"]

    moved = [
        (a - b).abs().max().item()
        for a, b in zip(once.parameters(), thrice.parameters(), strict=True)
    ]
    assert max(moved) > 0


def test_updates_per_step_is_at_least_one():
    with pytest.raises(ValueError, match="updates_per_step must be 1 or more"):
        config(updates_per_step=0)
