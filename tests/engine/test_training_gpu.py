"""The trainer on a GPU (skipped where there is none, as on CI): the cold start and RL steps
with the model on CUDA under bfloat16 autocast, each batch on the model's device, whole
weights and LoRA, a run that resumes there from its checkpoint, and a run's evaluation with
its models there.

On a GPU machine without Django: `python -m pytest -o addopts= --noconftest
tests/engine/test_training_gpu.py`."""

import pytest
import torch
from test_training_evaluate import evaluate_toy_run, record_loads
from test_training_rl import (
    bfloat16_rollout_recomputed,
    config,
    run_training,
    tiny_model,
    tiny_model_folder,
    tiny_tokenizer,
)

from workers.agent.models import load_trainable

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def on_gpu(model) -> bool:
    return {p.device.type for p in model.parameters()} == {"cuda"}


@pytest.mark.parametrize("lora", [False, True], ids=["whole", "lora"])
def test_cold_start_and_rl_steps_run_on_the_gpu_and_resume_there(tmp_path, lora):
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer).to("cuda")
    settings = dict(sft_epochs=1, save_every=1, precision="bfloat16", lora=lora, lora_rank=4)

    _, metrics = run_training(tmp_path, config(steps=2, **settings), model=model)
    _, resumed = run_training(
        tmp_path, config(steps=3, **settings), resume=True, model=tiny_model(tokenizer).to("cuda")
    )

    assert [m["step"] for m in metrics] == [1, 2]
    assert [m["step"] for m in resumed] == [1, 2, 3]
    assert all(m["grad_norm"] == m["grad_norm"] for m in resumed)  # no NaN on the GPU


def test_the_trainer_recomputes_what_the_gpu_sampled_up_to_rounding():
    batch, _, _, metrics = bfloat16_rollout_recomputed("cuda")

    assert batch.model_tokens > 20
    # Rounding, not a device or temperature mix-up: no token leaves DPPO's trust region.
    assert metrics["mismatch_abs"] < 0.02 and metrics["masked_share"] == 0.0


def test_a_run_trains_on_the_gpu_with_float32_master_weights(tmp_path):
    model, _ = load_trainable(tiny_model_folder(tmp_path))

    assert on_gpu(model)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_a_runs_evaluation_runs_its_models_on_the_gpu(tmp_path, monkeypatch):
    loads = record_loads(monkeypatch)

    report = evaluate_toy_run(tmp_path)

    assert [on for _, on in loads] == ["cuda", "cuda"]
    assert report["policies"]["trained"]["n"] == 2
