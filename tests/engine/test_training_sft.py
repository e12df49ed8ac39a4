"""The cold start's learning rate: constant, then falling to zero over its last share, whether
the epochs or the deadline end it."""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from workers.agent.trajectory import MODEL, PROMPT, Trajectory
from workers.training import sft as sft_module
from workers.training.config import TrainConfig
from workers.training.sft import sft, warmdown_factor


def test_the_factor_is_flat_then_falls_linearly_to_zero():
    assert [warmdown_factor(p, 0.5) for p in (0.0, 0.25, 0.5, 0.75, 1.0)] == [1, 1, 1, 0.5, 0]
    assert warmdown_factor(0.9, 0.0) == 1.0  # no warmdown: constant to the end
    assert warmdown_factor(0.5, 1.0) == 0.5  # the whole run: linear from the first batch


def trajectory(seed: int) -> Trajectory:
    g = torch.Generator().manual_seed(seed)
    t = Trajectory(question=f"q{seed}", model_name="test")
    t.append(torch.randint(0, 64, (6,), generator=g).tolist(), PROMPT)
    t.append(torch.randint(0, 64, (5,), generator=g).tolist(), MODEL, [-1.0] * 5)
    return t


def tiny_model() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
    )
    return LlamaForCausalLM(config)


def learning_rates(**kwargs) -> list[float]:
    rates = []
    sft(
        tiny_model(),
        [trajectory(seed) for seed in range(8)],
        max_batch_tokens=11,  # one trajectory a batch: 8 batches an epoch
        lr=1e-3,
        on_step=lambda step: rates.append(step["lr"]),
        **kwargs,
    )
    return rates


def test_the_epochs_end_the_cold_start_at_a_low_rate():
    rates = learning_rates(epochs=2, warmdown=0.5)
    assert len(rates) == 16
    assert rates[:9] == [pytest.approx(1e-3)] * 9  # progress 0 to 8/16: before the warmdown
    assert rates[8:] == sorted(rates[8:], reverse=True)
    assert rates[-1] == pytest.approx(1e-3 / 8)  # 15/16 of the way: 1/8 of the rate left
    assert learning_rates(epochs=2) == [pytest.approx(1e-3)] * 16


def test_a_deadline_that_comes_first_ends_it_at_a_low_rate(monkeypatch):
    clock = iter(range(1000))  # each reading of the clock one second later
    monkeypatch.setattr(sft_module, "monotonic", lambda: float(next(clock)))
    # Started at 0, 10 s allowed, a clock reading a batch: the epochs (800 batches) would
    # take far longer, so the time decides the progress, and the deadline stops it.
    rates = learning_rates(epochs=100, warmdown=0.5, deadline=10.0)
    assert len(rates) == 10  # batches starting at 1, 2, … 10 s
    factors = (1, 1, 1, 1, 1, 0.8, 0.6, 0.4, 0.2, 0)
    assert rates == [pytest.approx(1e-3 * f, abs=1e-12) for f in factors]


def test_the_warmdown_is_a_share():
    with pytest.raises(ValueError, match="sft_warmdown"):
        TrainConfig(sft_warmdown=1.5)
