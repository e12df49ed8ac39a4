"""A run's evaluation stage (`evaluate_run`): the trained agent against base and echo, with
its models on the worker's device (its GPU if it has one), as `sleuth eval --device auto`."""

import shutil

from test_training_rl import LIMITS, questions, tiny_model_folder
from test_training_rl import chunks as toy_chunks

import workers.training.evaluate as evaluate
from workers.agent.models import load_model
from workers.search.index import SearchIndex
from workers.training.config import TrainConfig


def record_loads(monkeypatch, *, load_on: str | None = None) -> list[tuple[str, str]]:
    """Spy on the evaluation's model loads: (device asked for, device the weights are on).
    `load_on` loads there instead of where asked (a CPU machine asked for a GPU)."""
    loads = []

    def spy(name=None, *, device="cpu", dtype=None):
        model, tokenizer = load_model(name, device=load_on or device, dtype=dtype)
        loads.append((str(device), next(model.parameters()).device.type))
        return model, tokenizer

    monkeypatch.setattr(evaluate, "load_model", spy)
    return loads


def evaluate_toy_run(tmp_path) -> dict:
    """A finished run's folder (its final model: a tiny one) evaluated on two questions."""
    base = tiny_model_folder(tmp_path)
    shutil.copytree(base, tmp_path / "run" / "final")
    config = TrainConfig(model=base, limits=LIMITS)
    index = SearchIndex.build(toy_chunks())
    return evaluate.evaluate_run(
        tmp_path / "run", config, index, questions()[:2], show_progress=False
    )


def test_a_runs_evaluation_asks_for_the_workers_gpu_when_it_has_one(tmp_path, monkeypatch):
    monkeypatch.setattr(evaluate, "best_device", lambda: "cuda")
    loads = record_loads(monkeypatch, load_on="cpu")  # no GPU here: asked for, loaded on CPU

    report = evaluate_toy_run(tmp_path)

    assert {asked for asked, _ in loads} == {"cuda"}
    assert len(loads) == 2  # the trained model, and the base model that echo shares
    assert {"trained", "base", f"echo@{report['echo_k']}"} <= set(report["policies"])
