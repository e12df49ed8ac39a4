"""Token-level policy losses, every variant in one function, with the mismatch metrics beside it.

All tensors are [batch, time] over the tokens of whole trajectories:
    logp          log π(token) under the policy being trained (carries the gradient)
    rollout_logp  log μ(token), what the rollout engine sampled with
    advantages    the trajectory's advantage, repeated on each of its tokens
    mask          1 on model-generated tokens, 0 on prompt and tool output (never trained on)

Losses (`LossConfig.kind`). There is no PPO-clip: the trainer takes one optimizer step per
batch of rollouts by default, so π_old is π itself and its clipped ratio would always be 1.
The rollout engine samples with the current weights, so μ is π_old up to engine numerics, and
the losses below weigh and mask by π/μ instead; with several updates a batch
(`updates_per_step`), μ stays the batch's sampler and DPPO's trust region is what bounds them:
    "dppo_tv"  DPPO (Qi et al., arXiv 2602.04879), Binary-TV: gradient A·sg(min(π/μ, C))·∇log π,
               dropping a token only when it has left the trust region in its advantage's
               direction: A>0 and π−μ > δ, or A<0 and π−μ < −δ.
    "dppo_kl"  the same with the Bernoulli KL between μ and π as the distance (> δ), in the same
               direction rule.
    "tis"      truncated importance sampling: A·sg(min(π/μ, C))·∇log π, no mask.
    "mis"      masked importance sampling: A·sg(π/μ)·∇log π, tokens with π/μ > C dropped.
Normalization is per token over the whole batch (every kept model token weighs the same),
not per sequence, so long trajectories are not down-weighted.
"""

import torch

from engine.training.config import LossConfig


def _masked_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (values * mask).sum() / mask.sum().clamp(min=1)


def bernoulli_kl(p: torch.Tensor, q: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """KL(Bern(p) ‖ Bern(q)) per token: how far the chosen token's probability moved."""
    p = p.clamp(eps, 1 - eps)
    q = q.clamp(eps, 1 - eps)
    return p * (p / q).log() + (1 - p) * ((1 - p) / (1 - q)).log()


def policy_loss(
    logp: torch.Tensor,
    rollout_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    config: LossConfig,
    ref_logp: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The scalar loss to minimize, and metrics: mismatch |π−μ|, KL(μ‖π), kept share, clip share."""
    mask = mask.to(logp.dtype)
    pi = logp.exp()
    mu = rollout_logp.exp()
    log_ratio_mu = logp - rollout_logp  # log π/μ
    ratio_mu = log_ratio_mu.detach().exp()
    keep = torch.ones_like(mask)

    if config.kind in ("dppo_tv", "dppo_kl"):
        if config.kind == "dppo_tv":
            distance = (pi - mu).detach()
            moved_up, moved_down = distance > config.delta, distance < -config.delta
        else:
            far = bernoulli_kl(mu, pi.detach()) > config.delta
            moved_up, moved_down = far & (pi.detach() > mu), far & (pi.detach() < mu)
        left_region = ((advantages > 0) & moved_up) | ((advantages < 0) & moved_down)
        keep = (~left_region).to(mask.dtype)
        weight = ratio_mu.clamp(max=config.is_cap)
        per_token = -advantages * weight * logp * keep
        clip_share = _masked_mean((ratio_mu > config.is_cap).to(mask.dtype), mask)
    elif config.kind == "tis":
        weight = ratio_mu.clamp(max=config.is_cap)
        per_token = -advantages * weight * logp
        clip_share = _masked_mean((ratio_mu > config.is_cap).to(mask.dtype), mask)
    elif config.kind == "mis":
        keep = (ratio_mu <= config.is_cap).to(mask.dtype)
        per_token = -advantages * ratio_mu * logp * keep
        clip_share = 1 - _masked_mean(keep, mask)
    else:
        raise ValueError(f"unknown loss kind {config.kind!r}")

    loss = _masked_mean(per_token, mask)
    metrics = {
        "mismatch_abs": _masked_mean((pi - mu).abs().detach(), mask).item(),
        # k3 estimator of KL(μ‖π) on tokens sampled from μ: unbiased and never negative.
        "mismatch_kl": _masked_mean((ratio_mu - 1 - log_ratio_mu.detach()), mask).item(),
        "masked_share": 1 - _masked_mean(keep.detach(), mask).item(),
        "clip_share": float(clip_share),
    }
    if ref_logp is not None and config.kl_ref_coef > 0:
        log_ratio_ref = ref_logp - logp
        kl_ref = log_ratio_ref.exp() - 1 - log_ratio_ref  # k3 estimate of KL(π‖π_ref)
        loss = loss + config.kl_ref_coef * _masked_mean(kl_ref, mask)
        metrics["kl_ref"] = _masked_mean(kl_ref.detach(), mask).item()
    return loss, metrics


def group_advantages(
    rewards: torch.Tensor, group_size: int, normalize_std: bool = True, eps: float = 1e-6
) -> torch.Tensor:
    """GRPO: each reward minus its group's mean, over the group's std unless Dr. GRPO (no std).

    `rewards` is flat [groups * group_size], the samples of one question side by side.
    """
    grouped = rewards.view(-1, group_size)
    centered = grouped - grouped.mean(dim=1, keepdim=True)
    if normalize_std:
        centered = centered / (grouped.std(dim=1, keepdim=True, unbiased=False) + eps)
    return centered.reshape(-1)


def teacher_nll(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """DGPO with an API teacher: the NLL of the teacher's correct trajectory under π.

    Minimizing it is the sampled estimate of forward KL(teacher ‖ π); it is added only for
    questions where every rollout failed, so the teacher pulls only where the student is lost.
    """
    mask = mask.to(logp.dtype)
    return -_masked_mean(logp, mask)
