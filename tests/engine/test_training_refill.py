"""Dynamic sampling: groups whose rewards all tie are replaced by fresh questions' groups."""

import json

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


def every_answer_right_and_tied_on_acme(monkeypatch):
    """Every rollout of "acme" is right with the same reward; every other group is wrong,
    one rollout above the other."""
    real = rl.score

    def score(trajectories, questions, cfg, judge):
        rewards = real(trajectories, questions, cfg, judge)
        for row, (reward, question) in enumerate(zip(rewards, questions, strict=True)):
            mastered = question.id == "acme"
            reward["correct"] = 1.0 if mastered else 0.0
            reward["total"] = 1.0 if mastered else float(row % 2) / 2
        return rewards

    monkeypatch.setattr(rl, "score", score)


def test_a_question_mastered_twice_in_a_row_is_retired_from_the_rest_of_the_run(
    tmp_path, monkeypatch
):
    every_answer_right_and_tied_on_acme(monkeypatch)
    cfg = config(steps=8, questions_per_step=2, group_size=2, hold_back_after=0, retire_after=2)
    _, metrics = run_training(tmp_path, cfg)
    out = tmp_path / "run"

    assert metrics[-1]["retired"] == 1, "acme was not visited twice: the test shows nothing"
    asked = [json.loads(line)["question_id"] for line in (out / "samples.jsonl").open()]
    retired_at = next(m["step"] for m in metrics if m["retired"])
    later = [
        json.loads(line)["question_id"]
        for line in (out / "samples.jsonl").open()
        if json.loads(line)["step"] > retired_at
    ]
    assert "acme" in asked and later and "acme" not in later
