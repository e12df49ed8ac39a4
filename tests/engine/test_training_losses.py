"""Policy losses and advantages against values worked out by hand."""

import math
import subprocess
import sys

import pytest
import torch

from engine.training.config import LossConfig
from engine.training.losses import (
    bernoulli_kl,
    group_advantages,
    policy_loss,
    teacher_nll,
)


def tokens(*probs: float) -> torch.Tensor:
    return torch.tensor([list(probs)], dtype=torch.float64).log()


def grad_of(kind: str, pi, mu, advantages, mask, **config):
    logp = tokens(*pi).requires_grad_()
    loss, metrics = policy_loss(
        logp,
        tokens(*mu),
        torch.tensor([advantages], dtype=torch.float64),
        torch.tensor([mask], dtype=torch.float64),
        LossConfig(kind=kind, **config),
    )
    loss.backward()
    return loss.item(), logp.grad[0].tolist(), metrics


def test_ppo_is_not_offered_since_one_update_per_batch_leaves_its_ratio_at_1():
    with pytest.raises(ValueError, match="unknown loss kind 'ppo'"):
        LossConfig("ppo")
    # Settings stored before PPO went carry its clip range; they still load.
    old = {"kind": "dppo_tv", "clip_low": 0.2, "clip_high": 0.28, "delta": 0.3}
    assert LossConfig.from_dict(old) == LossConfig(delta=0.3)


def test_run_settings_load_without_torch():
    # The web process reads and writes run settings and presets; it must not import torch.
    code = (
        "import sys, engine.training.config, engine.training.presets; "
        "sys.exit('torch' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_dppo_tv_drops_a_token_only_when_it_left_the_trust_region_in_its_advantages_direction():
    # π−μ = +0.4 on both tokens (beyond δ = 0.2). The A>0 token is dropped; the A<0 one,
    # which the update pushes back toward μ, is kept with weight min(π/μ, C) = 1.8.
    loss, grad, metrics = grad_of(
        "dppo_tv", pi=(0.9, 0.9), mu=(0.5, 0.5), advantages=(1.0, -1.0), mask=(1, 1), delta=0.2
    )
    assert grad == pytest.approx([0.0, 1.8 / 2])
    assert loss == pytest.approx(1.8 * math.log(0.9) / 2)
    assert metrics["masked_share"] == pytest.approx(0.5)
    assert metrics["mismatch_abs"] == pytest.approx(0.4)


def test_dppo_caps_the_importance_weight_at_c():
    _, grad, _ = grad_of(
        "dppo_tv", pi=(0.3,), mu=(0.1,), advantages=(-1.0,), mask=(1,), delta=0.5, is_cap=2.0
    )
    assert grad == pytest.approx([2.0])  # π/μ = 3, capped at 2


def test_dppo_kl_uses_the_bernoulli_kl_as_the_distance():
    assert bernoulli_kl(torch.tensor(0.5), torch.tensor(0.9)).item() == pytest.approx(
        0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)
    )
    # KL(0.5‖0.9) ≈ 0.51 > δ=0.3: dropped for A>0. KL(0.5‖0.6) ≈ 0.02: kept.
    _, grad, _ = grad_of(
        "dppo_kl", pi=(0.9, 0.6), mu=(0.5, 0.5), advantages=(1.0, 1.0), mask=(1, 1), delta=0.3
    )
    assert grad == pytest.approx([0.0, -1.2 / 2])


def test_masked_importance_sampling_drops_tokens_above_the_cap():
    _, grad, metrics = grad_of(
        "mis", pi=(0.6, 0.3), mu=(0.2, 0.2), advantages=(1.0, 1.0), mask=(1, 1), is_cap=2.0
    )
    assert grad == pytest.approx([0.0, -1.5 / 2])  # ratio 3 dropped, ratio 1.5 kept
    assert metrics["masked_share"] == pytest.approx(0.5)


def test_truncated_importance_sampling_keeps_every_token_with_a_capped_weight():
    _, grad, _ = grad_of(
        "tis", pi=(0.6, 0.3), mu=(0.2, 0.2), advantages=(1.0, 1.0), mask=(1, 1), is_cap=2.0
    )
    assert grad == pytest.approx([-2.0 / 2, -1.5 / 2])


@pytest.mark.parametrize("kind", ["dppo_tv", "dppo_kl", "tis", "mis"])
def test_prompt_and_tool_tokens_get_no_gradient(kind):
    _, grad, _ = grad_of(
        kind, pi=(0.4, 0.4, 0.4), mu=(0.4, 0.4, 0.4), advantages=(1.0, 1.0, 1.0), mask=(1, 0, 1)
    )
    assert grad[1] == 0.0
    assert grad[0] != 0.0 and grad[2] != 0.0


def test_normalization_is_per_token_over_the_batch():
    logp = tokens(0.5, 0.5, 0.5).requires_grad_()
    loss, _ = policy_loss(
        logp,
        logp.detach(),
        torch.ones(1, 3, dtype=torch.float64),
        torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64),
        LossConfig(kind="tis"),
    )
    loss.backward()
    assert logp.grad[0].tolist() == pytest.approx([-0.5, -0.5, 0.0])


def test_kl_to_the_reference_is_added_only_when_asked():
    logp = tokens(0.5)
    ref = tokens(0.25)
    args = (logp, logp, torch.zeros(1, 1, dtype=torch.float64), torch.ones(1, 1))
    plain, _ = policy_loss(*args, LossConfig(kind="tis"), ref_logp=ref)
    with_kl, metrics = policy_loss(*args, LossConfig(kind="tis", kl_ref_coef=0.1), ref_logp=ref)
    k3 = 0.5 - 1 - math.log(0.5)  # exp(log ref/π) − 1 − log(ref/π) with ref/π = 0.5
    assert plain.item() == 0.0
    assert with_kl.item() == pytest.approx(0.1 * k3)
    assert metrics["kl_ref"] == pytest.approx(k3)


def test_grpo_advantages_are_normalized_per_group_and_dr_grpo_only_centered():
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.5, 0.5])
    assert group_advantages(rewards, 2).tolist() == pytest.approx([1, -1, -1, 1, 0, 0], abs=1e-4)
    assert group_advantages(rewards, 2, normalize_std=False).tolist() == pytest.approx(
        [0.5, -0.5, -0.5, 0.5, 0, 0]
    )


def test_teacher_nll_is_the_mean_negative_log_prob_of_the_teachers_model_tokens():
    logp = tokens(0.5, 0.25, 0.125)
    assert teacher_nll(logp, torch.tensor([[1, 0, 1]])).item() == pytest.approx(
        -(math.log(0.5) + math.log(0.125)) / 2
    )
