"""The cold start's learning rate: constant, then falling to zero over its last share, whether
the epochs or the deadline end it."""

import pytest
import torch
from transformers import LlamaForCausalLM

from engine.agent.trajectory import MODEL, PROMPT, TOOL, Trajectory
from engine.training import sft as sft_module
from engine.training.batching import collate_packed
from engine.training.config import TrainConfig
from engine.training.logprobs import batch_logprobs
from engine.training.sft import sft, warmdown_factor
from tests.helpers.models import tiny_llama


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
    return tiny_llama(64)


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


def answered(seed: int) -> Trajectory:
    """A search turn, its results, then an answer turn of three tokens."""
    t = trajectory(seed)
    t.append([7, 8], TOOL)
    t.append([9, 10, 11], MODEL, [-1.0] * 3)
    t.finish_reason = "answer"
    return t


def test_the_answer_mask_holds_the_last_model_turn_of_an_answered_trajectory():
    t = answered(0)
    assert t.answer_mask == [0] * 6 + [0] * 5 + [0, 0] + [1, 1, 1]
    t.finish_reason = "max_turns"  # ended without an answer: its last turn is no answer
    assert t.answer_mask == [0] * len(t.token_ids)


def test_the_answer_weighs_in_the_loss_mask_and_the_count_of_targets_does_not_change():
    rows = [[answered(0)], [answered(1)]]
    plain = collate_packed(rows)
    heavy = collate_packed(rows, answer_weight=3.0)
    assert heavy.loss_mask[0].tolist()[-3:] == [3.0, 3.0, 3.0]
    assert heavy.loss_mask[0].tolist()[6:11] == [1.0] * 5  # the search's tokens as before
    assert heavy.model_tokens == plain.model_tokens == 16


def test_a_heavier_answer_is_learned_faster_than_the_search():
    """The same steps, answers weighing 1 or 5: with the weight the answer's log-likelihood
    rises more and the search's less (Adam scales the whole step, so the weight moves it
    towards the answer)."""

    def after(weight: float) -> tuple[float, float]:
        model = tiny_model()
        data = [answered(seed) for seed in range(4)]
        sft(model, data, epochs=10, lr=3e-3, max_batch_tokens=64, answer_weight=weight)
        batch = collate_packed([[t] for t in data])
        with torch.no_grad():
            logp, _ = batch_logprobs(model, batch)
        answer = torch.tensor([t.answer_mask for t in data], dtype=torch.bool)
        search = batch.loss_mask.bool() & ~answer
        return float(logp[answer].mean()), float(logp[search].mean())

    answer_1, search_1 = after(1.0)
    answer_5, search_5 = after(5.0)
    assert answer_5 > answer_1 + 0.02
    assert search_5 < search_1


def test_the_answer_weight_is_positive():
    with pytest.raises(ValueError, match="sft_answer_weight"):
        TrainConfig(sft_answer_weight=0)


def test_the_cold_start_leaves_no_gradient_for_rl_to_add_its_first_step_to():
    # RL's update accumulates onto .grad: a gradient left here would be stepped on twice.
    model = tiny_model()
    sft(model, [trajectory(seed) for seed in range(3)], epochs=1, max_batch_tokens=11)
    assert all(p.grad is None for p in model.parameters())
