"""A run's evaluation stage (`evaluate_run`): the trained agent against base and echo, with
its models on the worker's device (its GPU if it has one), as `sleuth eval --device auto`."""

import engine.training.evaluate as evaluate
from tests.helpers.toy import evaluate_toy_run, record_loads


def test_a_runs_evaluation_asks_for_the_workers_gpu_when_it_has_one(tmp_path, monkeypatch):
    monkeypatch.setattr(evaluate, "best_device", lambda: "cuda")
    loads = record_loads(monkeypatch, load_on="cpu")  # no GPU here: asked for, loaded on CPU

    report = evaluate_toy_run(tmp_path)

    assert {asked for asked, _ in loads} == {"cuda"}
    assert len(loads) == 2  # the trained model, and the base model that echo shares
    assert {"trained", "base", f"echo@{report['echo_k']}"} <= set(report["policies"])
