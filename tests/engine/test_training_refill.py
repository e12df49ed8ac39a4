"""Dynamic sampling: groups whose rewards all tie are replaced by fresh questions' groups."""

from engine.training import rl
from tests.helpers.toy import config, run_training


def rewards_that_tie_on_acme(monkeypatch):
    """Every rollout of the "acme" question scores the same; every other group has one
    rollout above the other."""
    real = rl.score

    def score(trajectories, questions, cfg, judge):
        rewards = real(trajectories, questions, cfg, judge)
        for row, (reward, question) in enumerate(zip(rewards, questions, strict=True)):
            reward["total"] = 0.0 if question.id == "acme" else float(row % 2)
        return rewards

    monkeypatch.setattr(rl, "score", score)


def test_a_step_refills_the_groups_that_tied_and_trains_on_a_full_batch(tmp_path, monkeypatch):
    rewards_that_tie_on_acme(monkeypatch)
    cfg = config(steps=4, questions_per_step=2, group_size=2, refill_rounds=2, hold_back_after=99)
    _, metrics = run_training(tmp_path, cfg)

    refilled = [m for m in metrics if m["sample_rounds"] > 1]
    assert refilled, "acme came up in none of the steps: the test would show nothing"
    for m in refilled:
        # acme's group was sampled, tied and dropped; another question's took its place
        assert m["groups_dropped"] == 1
    assert all(
        m["sample_rounds"] == 1 and m["groups_dropped"] == 0 for m in metrics if m not in refilled
    )


def test_without_refills_a_step_trains_on_the_groups_left(tmp_path, monkeypatch):
    rewards_that_tie_on_acme(monkeypatch)
    cfg = config(steps=4, questions_per_step=2, group_size=2, hold_back_after=99)
    _, metrics = run_training(tmp_path, cfg)

    assert {m["sample_rounds"] for m in metrics} == {1}
    assert any(m["groups_dropped"] == 1 for m in metrics)  # acme's group, not replaced
