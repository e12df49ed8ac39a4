"""Agents trained with LoRA share one loaded base model in the inference worker (issue 15).

Two published agents made from the same tiny base, each with its own adapter (peft, random
init, no training) beside its merged weights, load through the inference worker's cache
(serving.inference, no Celery worker): the base's weights load once, each agent answers
as its merged model does (the same greedy tokens), switching between them gives each its
own answers, and the cache counts the shared base once. A LoRA run's final folder keeps
its adapter and names its base model (engine.training.rl), and publishing carries both.
"""

from dataclasses import asdict
from pathlib import Path

import pytest
import torch
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.models import load_model
from engine.agent.settings import adapter_folder, read_agent_settings, write_agent_settings
from engine.agent.trajectory import SamplingParams
from engine.publishing import PublishInfo, publish_folder
from engine.search.index import SearchIndex
from serving import inference
from tests.helpers.toy import LIMITS, chunks, config, questions, run_training

QUESTIONS = [q.question for q in questions()]


def _final_folder(base: str, root: Path, seed: int) -> Path:
    """What a LoRA run leaves in final/: merged weights, the adapter, agent.json."""
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    torch.manual_seed(seed)
    peft_model = get_peft_model(
        model,
        LoraConfig(r=4, lora_alpha=16, target_modules="all-linear", init_lora_weights=False),
    )
    final = root / "final"
    peft_model.save_pretrained(final / "adapter")
    peft_model.merge_and_unload().save_pretrained(final)
    load_model(base)[1].save_pretrained(final)
    write_agent_settings(final, LIMITS, base_model=base)
    return final


def _publish(base: str, root: Path, name: str, *, seed: int, adapter: bool = True) -> Path:
    final = _final_folder(base, root / name, seed)
    if not adapter:
        import shutil

        shutil.rmtree(final / "adapter")
    index_dir = root / name / "index"
    index_dir.mkdir()
    (index_dir / "index.json").write_text("{}")
    info = PublishInfo(name=name, base_model=base, config={"limits": asdict(LIMITS)})
    return publish_folder(final, index_dir, info, root / name / "published")


def _agent(name: str, checkpoint_id: int) -> dict:
    return {
        "checkpoint_id": checkpoint_id,
        "published_prefix": f"runs/{name}/published",
        "index_prefix": "indexes/toy",
        "name": name,
    }


def _tokens(engine) -> list[list[int]]:
    trajectories = engine.rollout(QUESTIONS, SamplingParams(temperature=0.0))
    return [list(t.token_ids) for t in trajectories]


def _answers(loaded) -> list[list[int]]:
    """The agent's greedy tokens on every question, as agent_answer runs it."""
    with loaded.lock:
        assert loaded.activate()
        return _tokens(loaded.engine)


def _merged_answers(folder: Path, index) -> list[list[int]]:
    model, tokenizer = load_model(str(folder))
    settings = read_agent_settings(folder)
    engine = HFRolloutEngine(model, tokenizer, index, limits=settings.limits, batch_size=1)
    return _tokens(engine)


@pytest.fixture
def serving(tiny_model, tmp_path, monkeypatch, settings):
    """Published folders on this machine, the toy index, the tiny base on the allowlist, a
    fresh cache and shared-base registry, and every model load counted."""
    folders: dict[str, Path] = {}
    index = SearchIndex.build(chunks())
    loads: list[str] = []

    def counted_load_model(name=None, **kwargs):
        loads.append(str(name))
        return load_model(name, **kwargs)

    monkeypatch.setattr(inference, "_published_folder", lambda prefix: folders[prefix])
    monkeypatch.setattr("corpora.indexing.load_index", lambda prefix: index)
    monkeypatch.setattr("engine.agent.models.load_model", counted_load_model)
    monkeypatch.setattr(inference, "shared_bases", inference.SharedBases())
    settings.SLEUTH_ALLOWED_MODELS = ["default", tiny_model]

    def publish(name: str, checkpoint_id: int, *, seed: int, adapter: bool = True) -> dict:
        agent = _agent(name, checkpoint_id)
        folders[agent["published_prefix"]] = _publish(
            tiny_model, tmp_path, name, seed=seed, adapter=adapter
        )
        return agent

    return publish, folders, index, loads


def test_two_lora_agents_share_one_base_and_each_answers_as_its_merged_model(serving, tiny_model):
    publish, folders, index, loads = serving
    first, second = publish("first", 1, seed=1), publish("second", 2, seed=2)
    folder_1, folder_2 = (folders[a["published_prefix"]] for a in (first, second))
    assert adapter_folder(folder_1) and read_agent_settings(folder_1).base_model == tiny_model
    expected_1, expected_2 = _merged_answers(folder_1, index), _merged_answers(folder_2, index)
    assert expected_1 != expected_2  # two different agents, or switching would prove nothing
    cache = inference.AgentCache(1, inference.load_agent)  # room for one model: the base
    loads.clear()

    loaded_1, was_loaded_1 = cache.get(first)
    loaded_2, was_loaded_2 = cache.get(second)

    assert was_loaded_1 and was_loaded_2 and cache.loads == 2
    assert loads == [tiny_model]  # the base's weights, once; never a merged model
    assert loaded_1.engine.model is loaded_2.engine.model and loaded_1.lock is loaded_2.lock
    assert cache.models() == 1 and len(inference.shared_bases) == 1
    assert _answers(loaded_1) == expected_1
    assert _answers(loaded_2) == expected_2
    assert _answers(loaded_1) == expected_1  # switching back
    assert cache.get(first)[0] is loaded_1 and cache.get(second)[0] is loaded_2
    assert loads == [tiny_model]


def test_agent_answer_switches_adapters_on_the_shared_base(serving, tiny_model, monkeypatch):
    publish, folders, index, loads = serving
    first, second = publish("first", 1, seed=1), publish("second", 2, seed=2)
    monkeypatch.setattr(inference, "_cache", inference.AgentCache(2, inference.load_agent))
    loads.clear()

    answers = [
        inference.agent_answer(agent=agent, question=QUESTIONS[0])
        for agent in (first, second, first, second)
    ]

    assert [a["cache"] for a in answers] == ["miss", "miss", "hit", "hit"]
    assert loads == [tiny_model]
    assert _same(answers[0]) == _same(answers[2]) and _same(answers[1]) == _same(answers[3])
    for agent, answer in ((first, answers[2]), (second, answers[3])):
        model, tokenizer = load_model(str(folders[agent["published_prefix"]]))
        engine = HFRolloutEngine(model, tokenizer, index, limits=LIMITS, batch_size=1)
        (merged,) = engine.rollout(QUESTIONS[:1], SamplingParams(temperature=0.0))
        assert (answer["answer"], answer["completion_tokens"]) == (
            merged.answer,
            merged.model_tokens,
        )


def _same(answer: dict) -> dict:
    keys = ("answer", "finish_reason", "searches", "prompt_tokens", "completion_tokens")
    return {key: answer[key] for key in keys}


def test_a_whole_agent_evicts_the_shared_base_and_a_base_off_the_allowlist_loads_whole(
    serving, tiny_model, settings
):
    publish, folders, index, loads = serving
    first, second = publish("first", 1, seed=1), publish("second", 2, seed=2)
    whole = publish("whole", 3, seed=3, adapter=False)
    cache = inference.AgentCache(1, inference.load_agent)
    loaded_1, _ = cache.get(first)
    cache.get(second)
    loads.clear()

    loaded_3, _ = cache.get(whole)  # no adapter: its merged model, and no room for the base

    assert loads == [str(folders[whole["published_prefix"]])] and loaded_3.shared is None
    assert cache.models() == 1 and len(inference.shared_bases) == 0
    with loaded_1.lock:
        assert not loaded_1.activate()  # a request that still held it gets it again
    settings.SLEUTH_ALLOWED_MODELS = ["default"]
    loads.clear()
    loaded_1, _ = cache.get(first)
    assert loads == [str(folders[first["published_prefix"]])] and loaded_1.shared is None


def test_a_lora_run_keeps_its_adapter_and_names_its_base(tmp_path, tiny_model):
    result, _ = run_training(tmp_path, config(steps=1, lora=True, lora_rank=4, model=tiny_model))

    final = Path(result["final"])
    assert adapter_folder(final) == final / "adapter"
    assert (final / "adapter" / "adapter_model.safetensors").is_file()
    assert (final / "model.safetensors").is_file()  # the merged model, usable as made
    assert read_agent_settings(final).base_model == tiny_model
    model, _ = load_model(str(final))
    assert not any("lora" in name for name, _ in model.named_parameters())
