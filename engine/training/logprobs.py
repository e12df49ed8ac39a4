"""Log-probs of the tokens the loss trains on, without paying for the LM head everywhere.

The LM head of the default model maps 576 hidden units to 49,152 vocabulary entries: on
CPU it costs more than the rest of the network for the same tokens. Prompt and tool
tokens are most of a trajectory and are never trained on, so we run the decoder over the
whole sequence but the head (and the softmax) only at the positions that predict a model
token.

The rows of a cold-start micro-batch (one trajectory each) begin with the same system
prompt, 29 % of the set's tokens: the decoder runs those tokens once for the whole batch,
and every row attends to that one copy's keys and values. Exact: the gradient flows back
through the shared copy as it would through each row's own (1.21× the cold start's
trajectories a minute, `bench/cold_start_batching.py`).
"""

import torch
from transformers import DynamicCache, PreTrainedModel

from engine.agent.models import with_cache
from engine.agent.precision import autocast
from engine.training.batching import TokenBatch


def _decoder_and_head(model: PreTrainedModel):
    inner = model.get_base_model() if hasattr(model, "get_base_model") else model
    return inner.get_decoder(), inner.get_output_embeddings()


def token_logprobs(
    model: PreTrainedModel,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    target_mask: torch.Tensor,
    *,
    with_entropy: bool = False,
    position_ids: torch.Tensor | None = None,
    temperature: float = 1.0,
    precision: str = "float32",
    share_prefix: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """log π(x_t | x_<t) at every t where target_mask is 1, zeros elsewhere; [B, T].

    `temperature` is the one the rollout sampled with: π is then the distribution the
    tokens were drawn from (logits / T), so π/μ measures policy drift and engine mismatch,
    not the temperature. 0 (greedy) and 1 leave the logits as they are.

    With `position_ids` the rows are packed (`batching.collate_packed`): transformers
    finds where positions restart and keeps each trajectory's attention to itself, which
    it does only without an attention mask. Also the entropy of π at those positions when
    asked (it comes almost free: the logits are already there).

    `precision` "bfloat16" runs the decoder and the head under bfloat16 autocast (the
    backward too), as the rollouts of such a run sample; the softmax stays in float32.

    The leading tokens all rows share (`shared_prefix_length`) run once for the batch
    unless `share_prefix` is off (the benchmark's baseline).
    """
    decoder, head = _decoder_and_head(model)
    start = (
        shared_prefix_length(input_ids, attention_mask, target_mask, position_ids)
        if share_prefix
        else 0
    )
    where = target_mask[:, start + 1 :].bool()  # the hidden state at t-1 predicts token t
    with autocast(precision, input_ids.device):
        if start:
            # The prefix once, its cache repeated along the batch (a differentiable copy),
            # then every row's own tokens after it, positioned from where it ends.
            cache = DynamicCache()
            decoder(input_ids=input_ids[:1, :start], use_cache=True, **with_cache(decoder, cache))
            cache.batch_repeat_interleave(input_ids.shape[0])
            width = input_ids.shape[1]
            out = decoder(
                input_ids=input_ids[:, start:],
                attention_mask=attention_mask,
                position_ids=torch.arange(start, width, device=input_ids.device).expand(
                    input_ids.shape[0], -1
                ),
                use_cache=True,
                **with_cache(decoder, cache),
            )
        elif position_ids is not None:
            out = decoder(input_ids=input_ids, position_ids=position_ids, use_cache=False)
        else:
            out = decoder(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
        logits = head(out.last_hidden_state[:, :-1][where])
    logits = logits.float()
    if temperature > 0 and temperature != 1.0:
        logits = logits / temperature
    targets = input_ids[:, start + 1 :][where]
    log_norm = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1) - log_norm

    logp = torch.zeros(input_ids.shape, dtype=picked.dtype, device=picked.device)
    logp[:, start + 1 :][where] = picked
    entropy = None
    if with_entropy:
        with torch.no_grad():
            probs = (logits - log_norm.unsqueeze(-1)).exp()
            per_token = log_norm - (probs * logits).sum(-1)
        entropy = torch.zeros_like(logp)
        entropy[:, start + 1 :][where] = per_token
    return logp, entropy


def shared_prefix_length(
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    target_mask: torch.Tensor,
    position_ids: torch.Tensor | None = None,
) -> int:
    """How many leading tokens a batch can run once for all its rows: the tokens every row
    has, the same, before its first target, less the last one (whose hidden state predicts
    that target, and so is computed with the row's own tokens). 0 for a single row, for
    rows that do not start alike, and for rows that pack several trajectories (their
    positions restart, which only the packed path keeps apart)."""
    if input_ids.shape[0] < 2:
        return 0
    if position_ids is not None:
        counted = torch.arange(input_ids.shape[1], device=input_ids.device)
        if not ((position_ids == counted) | ~attention_mask.bool()).all():
            return 0
    alike = (input_ids == input_ids[:1]).all(0) & attention_mask.bool().all(0)
    trained = target_mask.bool().any(0)
    first_unlike = int(alike.logical_not().nonzero()[0]) if not alike.all() else alike.numel()
    first_target = int(trained.nonzero()[0]) if trained.any() else trained.numel()
    return max(0, min(first_unlike, first_target - 1))


def batch_logprobs(
    model: PreTrainedModel,
    batch: TokenBatch,
    *,
    with_entropy: bool = False,
    temperature: float = 1.0,
    precision: str = "float32",
    share_prefix: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """`token_logprobs` at the model tokens of a collated batch, packed or not."""
    return token_logprobs(
        model,
        batch.input_ids,
        batch.attention_mask,
        batch.loss_mask,
        with_entropy=with_entropy,
        position_ids=batch.position_ids,
        temperature=temperature,
        precision=precision,
        share_prefix=share_prefix,
    )


def full_logits_logprobs(
    model: PreTrainedModel, input_ids: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """The naive way (head and softmax at every position), kept as the benchmark baseline."""
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, input_ids[:, 1:].unsqueeze(-1))
    return torch.nn.functional.pad(logp.squeeze(-1), (1, 0))
