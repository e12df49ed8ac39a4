"""Run settings as JSON and back: one reader for every settings dataclass."""

import pytest

from engine.rewards.judge import JudgeConfig
from engine.rewards.reward import RewardConfig
from engine.training.config import LossConfig, TrainConfig
from engine.training.presets import preset_config


def test_a_runs_settings_survive_json_with_every_nested_part():
    config = preset_config("cpu-45min", {"reward": {"judge": {"name": "house"}}})
    data = config.to_dict()

    again = TrainConfig.from_dict(data)

    assert again == config
    assert isinstance(again.reward.judge, JudgeConfig) and again.reward.judge.name == "house"
    assert again.limits.results_per_search == config.limits.results_per_search


@pytest.mark.parametrize(
    ("path", "label"),
    [((), "run"), (("loss",), "loss"), (("limits",), "limits"), (("reward",), "reward")],
)
def test_an_unknown_name_anywhere_is_refused_with_the_known_ones(path, label):
    data = TrainConfig().to_dict()
    node = data
    for key in path:
        node = node[key]
    node["typo_field"] = 1

    with pytest.raises(ValueError, match=rf"unknown {label} settings \['typo_field'\]; known"):
        TrainConfig.from_dict(data)


def test_names_older_versions_stored_are_ignored():
    data = TrainConfig().to_dict()
    data["loss"]["clip_low"] = 0.2  # PPO's clip range, gone with PPO
    data["reward"]["judge"] = {"base_url": "https://j.example", "api_key_env": "KEY"}

    config = TrainConfig.from_dict(data)

    assert config.loss == LossConfig()
    assert config.reward.judge == JudgeConfig(base_url="https://j.example")


def test_settings_that_are_not_an_object_are_refused():
    with pytest.raises(ValueError, match="must be an object"):
        RewardConfig.from_dict({"judge": "https://j.example"})


def test_option_fields_become_command_line_options_with_their_own_types():
    from dataclasses import dataclass, field
    from typing import Literal

    from engine.settings import CommandLineOption, command_line_options, option

    @dataclass
    class Inner:
        turns: int | None = option(None, help="turns")
        unflagged: int = 3

    @dataclass
    class Outer:
        kind: Literal["a", "b"] = option("a", help="which", flag="--pick")
        rate: float = option(0.1, help="rate")
        strict: bool = option(False, help="be strict")
        inner: Inner = field(default_factory=Inner)

    assert command_line_options(Outer) == [
        CommandLineOption("--pick", "kind", str, "which", ("a", "b")),
        CommandLineOption("--rate", "rate", float, "rate"),
        CommandLineOption("--strict", "strict", bool, "be strict"),
        CommandLineOption("--turns", "inner.turns", int, "turns"),
    ]
