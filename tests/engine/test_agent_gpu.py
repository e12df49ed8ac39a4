"""The agent's decoding rules and the trainer's shared prompt on a GPU (skipped where there is
none, as on CI): the same tiny models as the CPU tests, moved to CUDA, so that a rule or a
prefix computed on the CPU against tensors on the GPU fails here and not on a worker.

On a GPU machine without Django: `python -m pytest -o addopts= --noconftest
tests/engine/test_agent_gpu.py`."""

import pytest
import torch

from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.trajectory import Limits, SamplingParams
from engine.training.batching import collate_packed
from engine.training.logprobs import batch_logprobs
from tests.helpers.decoding import (
    QUESTION,
    FiguresIndex,
    answers,
    loops_in,
    make_looping_model,
    make_random_model,
    segments,
)
from tests.helpers.models import ONE_LAYER, char_tokenizer, tiny_llama
from tests.helpers.packing import SYSTEM, tiny_model, trajectory

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def on_cuda(built):
    model, tokenizer = built
    return model.to("cuda"), tokenizer


def test_greedy_decoding_on_the_gpu_writes_no_word_loop_when_guarded():
    looping = on_cuda(make_looping_model())
    greedy = SamplingParams(temperature=0.0)
    assert all(loops_in(text) for text in segments(looping, False, greedy))

    guarded = segments(looping, True, greedy)
    assert all(len(text.split()) >= 6 for text in guarded), guarded
    assert not any(loops_in(text) for text in guarded), guarded


def test_the_grounded_scope_rules_logits_on_the_gpu():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, **ONE_LAYER).to("cuda")
    limits = Limits(grounded_scope=True)
    engine = HFRolloutEngine(model, tokenizer, FiguresIndex(), limits=limits, system_prompt="s")
    logits = torch.zeros(2, len(tokenizer), device="cuda")
    f, e = tokenizer.convert_tokens_to_ids(["f", "e"])
    logits[:, f], logits[:, e] = 2.0, 1.0
    typed = tokenizer.encode("<search>[P", add_special_tokens=False)
    ruled = engine._rule(logits, [(QUESTION, typed), ("What was Pfizer's capex?", typed)])
    assert ruled.device.type == "cuda"
    assert ruled[0].argmax() == e and ruled[1].argmax() == f


def test_grounded_answers_on_the_gpu_write_only_figures_they_were_shown():
    unshown, written = answers(on_cuda(make_random_model()), grounded=True)
    assert not any(unshown), written


@pytest.mark.parametrize("precision, atol", [("float32", 1e-4), ("bfloat16", 0.1)])
def test_rows_sharing_a_system_prompt_on_the_gpu_train_as_rows_alone(precision, atol):
    model = tiny_model().to("cuda").train()
    trajectories = [trajectory(seed, 3 + seed, 2 * seed, 2 + seed, SYSTEM) for seed in range(4)]
    batch = collate_packed([[t] for t in trajectories]).to("cuda")

    def logprobs_and_gradients(**options):
        model.zero_grad()
        logp, _ = batch_logprobs(model, batch, precision=precision, **options)
        (logp * batch.loss_mask).sum().backward()
        return logp, [p.grad.clone() for p in model.parameters()]

    shared, shared_grads = logprobs_and_gradients()
    whole, whole_grads = logprobs_and_gradients(share_prefix=False)
    assert torch.allclose(shared, whole, atol=atol)
    scale = max(g.abs().max().item() for g in whole_grads)
    assert all(
        torch.allclose(a, b, atol=atol * scale)
        for a, b in zip(shared_grads, whole_grads, strict=True)
    )
