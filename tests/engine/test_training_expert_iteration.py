"""Expert iteration (`advantage="correct"`): the policy fine-tuned on its own samples the
judge finds correct, every other sample left out, ties or not."""

import pytest
import torch

from engine.training import rl
from tests.helpers.toy import config, run_training


def acme_always_right_the_rest_half_right(monkeypatch):
    """Every rollout of "acme" is right with the same reward (a tied group); in every other
    group the even rows are wrong and the odd ones right."""
    real = rl.score

    def score(trajectories, questions, cfg, judge):
        rewards = real(trajectories, questions, cfg, judge)
        for row, (reward, question) in enumerate(zip(rewards, questions, strict=True)):
            right = question.id == "acme" or row % 2 == 1
            reward["correct"] = 1.0 if right else 0.0
            reward["total"] = 1.0 if question.id == "acme" else float(right) / 2
        return rewards

    monkeypatch.setattr(rl, "score", score)


def trained_rows(monkeypatch) -> list[tuple[list[int], list[float]]]:
    """Each policy update's rows and their advantages, recorded on the way through."""
    seen = []
    real = rl.policy_update

    def policy_update(model, trajectories, advantages, train_rows, dgpo, **kwargs):
        seen.append((list(train_rows), [advantages[i].item() for i in train_rows]))
        return real(model, trajectories, advantages, train_rows, dgpo, **kwargs)

    monkeypatch.setattr(rl, "policy_update", policy_update)
    return seen


def test_advantages_are_the_judge_s_verdict():
    cfg = config(advantage="correct", group_size=2)
    totals = torch.tensor([0.9, 0.9, 0.3, 0.1])
    assert rl.step_advantages(totals, [True, True, False, True], cfg).tolist() == [1, 1, 0, 1]
    grpo = rl.step_advantages(totals, [True, True, False, True], config(group_size=2))
    assert grpo.tolist() == pytest.approx([0, 0, 1, -1], abs=1e-4)


def test_an_unknown_advantage_is_refused_by_name():
    with pytest.raises(
        ValueError, match="unknown advantage 'reward'; choose one of group, correct"
    ):
        config(advantage="reward")


@pytest.mark.parametrize("advantage", ["group", "correct"])
def test_expert_iteration_trains_on_correct_samples_tied_groups_included(
    tmp_path, monkeypatch, advantage
):
    acme_always_right_the_rest_half_right(monkeypatch)
    seen = trained_rows(monkeypatch)
    cfg = config(
        steps=4, questions_per_step=2, group_size=2, hold_back_after=99, advantage=advantage
    )
    _, metrics = run_training(tmp_path, cfg, name=advantage)
    assert len(seen) == 4  # an update a step

    with_acme = [m for m in metrics if m["groups_dropped"]]
    if advantage == "group":
        # acme's group ties: GRPO drops it, and trains on both rows of every other group
        assert with_acme, "acme came up in none of the steps: the test would show nothing"
        assert all(len(rows) % 2 == 0 for rows, _ in seen)
        assert any(a < 0 for _, advantages in seen for a in advantages)
    else:
        # every group has a right sample: none dropped; only the right samples, at 1
        assert not with_acme
        assert all(advantages and set(advantages) == {1.0} for _, advantages in seen)
        assert any(len(rows) == 3 for rows, _ in seen), "acme's tied group was never trained on"
