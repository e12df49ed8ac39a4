"""The trainer's rollout engine, chosen by name, and its weights kept level with the trainer's.

sglang cannot load here (no GPU): a second transformers engine over its own model object
stands in for it, which exercises the same path (weights sent after every update)."""

import copy

import pytest
import torch
from peft import LoraConfig, get_peft_model

from engine.agent.engines import build_rollout_engine, sync_weights
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.trajectory import Limits, SamplingParams
from engine.search.index import SearchIndex
from tests.helpers.toy import chunks, questions, tiny_model, tiny_tokenizer

LIMITS = Limits(max_new_tokens=16)


def _tokens(engine) -> list[list[int]]:
    trajectories = engine.rollout([q.question for q in questions()], SamplingParams(0.0))
    return [t.token_ids for t in trajectories]


def test_the_transformers_engine_samples_from_the_trainers_own_model():
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer)
    engine = build_rollout_engine(
        "hf", model, tokenizer, SearchIndex.build(chunks()), limits=LIMITS, model_name="tiny"
    )
    assert isinstance(engine, HFRolloutEngine) and engine.model is model
    with pytest.raises(ValueError, match="unknown rollout engine 'vllm'"):
        build_rollout_engine("vllm", model, tokenizer, None, limits=LIMITS, model_name="tiny")


@pytest.mark.parametrize("lora", [False, True])
def test_a_separate_engine_samples_what_the_trainer_would_after_a_weight_sync(lora):
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    trainer_model = tiny_model(tokenizer, seed=1)
    if lora:
        config = LoraConfig(r=4, target_modules="all-linear", init_lora_weights=False)
        trainer_model = get_peft_model(trainer_model, config)
    trainer_engine = HFRolloutEngine(trainer_model, tokenizer, index, limits=LIMITS)
    remote = HFRolloutEngine(tiny_model(tokenizer, seed=2), tokenizer, index, limits=LIMITS)
    assert _tokens(remote) != _tokens(trainer_engine)

    sync_weights(remote, trainer_model)

    assert _tokens(remote) == _tokens(trainer_engine)
    if lora:  # the trainer's adapters are left as they were
        assert any("lora_A" in name for name, _ in trainer_model.named_parameters())
        assert not torch.equal(
            trainer_model.get_base_model().model.layers[0].self_attn.q_proj.base_layer.weight,
            remote.model.model.layers[0].self_attn.q_proj.weight,
        )


def test_a_bfloat16_engine_samples_from_its_own_copy_and_follows_every_update():
    tokenizer = tiny_tokenizer()
    index = SearchIndex.build(chunks())
    trainer_model = tiny_model(tokenizer, seed=1)
    engine = build_rollout_engine(
        "hf", trainer_model, tokenizer, index, limits=LIMITS, model_name="t", precision="bfloat16"
    )
    assert engine.model is not trainer_model
    assert {p.dtype for p in engine.model.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in trainer_model.parameters()} == {torch.float32}  # master weights

    with torch.no_grad():  # an "update" of the trainer's weights
        for p in trainer_model.parameters():
            p.add_(torch.randn_like(p))
    updated = HFRolloutEngine(
        copy.deepcopy(trainer_model).to(torch.bfloat16), tokenizer, index, limits=LIMITS
    )
    assert _tokens(engine) != _tokens(updated)

    sync_weights(engine, trainer_model)

    assert _tokens(engine) == _tokens(updated)
    assert {p.dtype for p in engine.model.parameters()} == {torch.bfloat16}


def test_auto_precision_is_bfloat16_only_where_the_cpu_runs_it_fast(monkeypatch):
    from engine.agent import precision

    monkeypatch.setattr(precision, "cpu_has_fast_bf16", lambda: False)
    assert precision.resolve_precision("auto") == "float32"
    monkeypatch.setattr(precision, "cpu_has_fast_bf16", lambda: True)
    assert precision.resolve_precision("auto") == "bfloat16"
    assert precision.resolve_precision("float32") == "float32"
    with pytest.raises(ValueError, match="unknown precision 'fp8'"):
        precision.resolve_precision("fp8")


def test_an_sglang_engine_is_given_the_runs_precision_and_its_share_of_the_gpu(
    tmp_path, monkeypatch
):
    # sglang needs a GPU: a stand-in module records what the engine is asked to start with.
    import sys
    import types

    from tests.helpers.toy import tiny_model_folder

    started = {}
    stand_in = types.ModuleType("sglang")
    stand_in.Engine = lambda **kwargs: started.update(kwargs)
    monkeypatch.setitem(sys.modules, "sglang", stand_in)

    build_rollout_engine(
        "sglang",
        None,
        None,
        SearchIndex.build(chunks()),
        limits=LIMITS,
        model_name="tiny",
        model_path=tiny_model_folder(tmp_path),
        precision="bfloat16",
        memory_share=0.45,
    )

    assert started["dtype"] == "bfloat16" and started["mem_fraction_static"] == 0.45
    started.clear()  # serving: the model's own type, sglang's own memory share
    build_rollout_engine(
        "sglang",
        None,
        None,
        SearchIndex.build(chunks()),
        limits=LIMITS,
        model_name="tiny",
        model_path=str(tmp_path / "tiny-model"),
    )
    assert "dtype" not in started and "mem_fraction_static" not in started
