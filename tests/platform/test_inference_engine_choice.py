"""Which engine the inference worker answers with (SLEUTH_SERVING_ENGINE, issue 15).

"hf" (transformers) is the default; "sglang" (GPU workers) makes the loader ask
`build_rollout_engine` for an sglang engine over the published folder, and sglang is never
imported here (no GPU): the builder is replaced by a fake, or `sglang` by a fake module
with the offline Engine API's shapes. What runs on a real GPU with real sglang is
unverified.
"""

import asyncio
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from engine.agent.engines import ENGINES
from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.protocol import SYSTEM_PROMPT
from engine.agent.settings import write_agent_settings
from engine.agent.trajectory import Limits, SamplingParams
from serving import inference, sglang_serving

LIMITS = Limits(max_turns=3, max_new_tokens=40, max_result_tokens=90, results_per_search=2)
INDEX = object()  # the project index: only passed along


def _agent(name: str, checkpoint_id: int) -> dict:
    return {
        "checkpoint_id": checkpoint_id,
        "published_prefix": f"projects/1/runs/{checkpoint_id}/published/{name}",
        "index_prefix": "indexes/toy",
        "name": name,
    }


def _settings_in_a_fresh_process(**env) -> subprocess.CompletedProcess:
    """The settings module loaded in a new process with `env` (None: left out)."""
    root = Path(__file__).resolve().parents[2]  # this tree's settings, not an installed one
    merged = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(root / "platform"), str(root)]),
        **env,
    }
    code = "from django.conf import settings as s; print(s.SLEUTH_SERVING_ENGINE)"
    return subprocess.run(
        [sys.executable, "-c", code],
        env={k: v for k, v in merged.items() if v is not None},
        capture_output=True,
        text=True,
    )


def test_hf_is_the_default_and_an_unknown_engine_is_refused_at_settings_load(settings):
    assert _settings_in_a_fresh_process(SLEUTH_SERVING_ENGINE=None).stdout.strip() == "hf"
    assert _settings_in_a_fresh_process(SLEUTH_SERVING_ENGINE="SGLang").stdout.strip() == "sglang"

    refused = _settings_in_a_fresh_process(SLEUTH_SERVING_ENGINE="vllm")

    assert refused.returncode != 0
    assert "ImproperlyConfigured" in refused.stderr
    assert "SLEUTH_SERVING_ENGINE='vllm': choose one of hf, sglang" in refused.stderr
    assert settings.SLEUTH_SERVING_ENGINES == ENGINES  # the settings name every engine


class FakeEngine:
    """What the loader gets from the (replaced) builder: an engine that can shut down."""

    def __init__(self, name: str, events: list):
        self.name, self.events, self.closed = name, events, False

    def shutdown(self):
        self.events.append(f"shutdown {self.name}")
        self.closed = True

    def rollout(self, questions, sampling):
        assert not self.closed
        self.events.append(f"answer {self.name}")
        answer = types.SimpleNamespace(
            answer=f"from {self.name}", finish_reason="answer", prompt_length=1, model_tokens=1
        )
        return [answer for _ in questions]


@pytest.fixture
def sglang_loader(settings, monkeypatch, tmp_path):
    """SLEUTH_SERVING_ENGINE = "sglang", published folders in tmp_path, the builder and the
    index replaced; a transformers load fails the test."""
    settings.SLEUTH_SERVING_ENGINE = "sglang"
    folders = {}
    calls, events = [], []

    def published_folder(prefix):
        folder = tmp_path / prefix.rsplit("/", 1)[-1]
        folder.mkdir(exist_ok=True)
        write_agent_settings(folder, LIMITS)
        folders[prefix] = folder
        return folder

    def builder(kind, model, tokenizer, tool, **kwargs):
        calls.append((kind, model, tokenizer, tool, kwargs))
        events.append(f"build {kwargs['model_name']}")
        return FakeEngine(kwargs["model_name"], events)

    def no_transformers(*args, **kwargs):
        raise AssertionError("the sglang path loaded the model with transformers")

    monkeypatch.setattr(inference, "_published_folder", published_folder)
    monkeypatch.setattr("corpora.indexing.load_index", lambda prefix: INDEX)
    monkeypatch.setattr("engine.agent.engines.build_rollout_engine", builder)
    monkeypatch.setattr("engine.agent.models.load_model", no_transformers)
    monkeypatch.setattr(sglang_serving, "_live", [])
    return folders, calls, events


def test_with_sglang_the_loader_asks_the_builder_for_sglang_over_the_published_folder(
    sglang_loader,
):
    folders, calls, events = sglang_loader
    agent = _agent("filings-first", 7)

    loaded = inference.load_agent(agent)

    ((kind, model, tokenizer, tool, kwargs),) = calls
    assert (kind, model, tokenizer, tool) == ("sglang", None, None, INDEX)
    assert kwargs == {
        "limits": LIMITS,
        "model_name": "filings-first",
        "model_path": str(folders[agent["published_prefix"]]),
        "batch_size": 1,
        "system_prompt": SYSTEM_PROMPT,
    }
    assert isinstance(loaded.engine, FakeEngine) and loaded.index is INDEX
    assert loaded.limits == LIMITS
    assert "sglang" not in sys.modules


def test_one_sglang_engine_per_process_shut_down_before_the_next_loads(sglang_loader):
    _, _, events = sglang_loader
    first, second = _agent("first", 1), _agent("second", 2)
    cache = inference.AgentCache(2, inference.load_agent)

    loaded_1, _ = cache.get(first)
    loaded_2, _ = cache.get(second)
    assert events == ["build first", "shutdown first", "build second"]

    again, was_loaded = cache.get(first)  # its engine was shut down: it loads again

    assert was_loaded and again is not loaded_1
    assert events[3:] == ["shutdown second", "build first"]
    assert cache.get(first) == (again, False)


def test_a_request_that_got_an_agent_shut_down_since_loads_it_again(sglang_loader, monkeypatch):
    _, _, events = sglang_loader
    first, second = _agent("first", 1), _agent("second", 2)
    cache = inference.AgentCache(2, inference.load_agent)
    monkeypatch.setattr(inference, "_cache", cache)
    loaded_1, _ = cache.get(first)
    cache.get(second)  # shuts the first one's engine down
    with loaded_1.lock:
        assert not loaded_1.activate()

    answer = inference.agent_answer(agent=first, question="Capital of France?")

    assert (answer["answer"], answer["cache"]) == ("from first", "miss")
    assert events[-3:] == ["shutdown second", "build first", "answer first"]


def test_an_engine_answering_is_shut_down_only_after_its_answer(sglang_loader):
    _, _, events = sglang_loader
    cache = inference.AgentCache(2, inference.load_agent)
    loaded_1, _ = cache.get(_agent("first", 1))

    with loaded_1.lock:  # answering
        loading = threading.Thread(target=cache.get, args=(_agent("second", 2),))
        loading.start()
        time.sleep(0.3)
        assert events == ["build first"]
    loading.join(timeout=10)

    assert events == ["build first", "shutdown first", "build second"]


def test_hf_loads_with_transformers_and_never_asks_for_sglang(settings, monkeypatch, tiny_model):
    assert settings.SLEUTH_SERVING_ENGINE == "hf"  # the test settings leave the default
    monkeypatch.setattr(inference, "_published_folder", lambda prefix: tiny_model)
    monkeypatch.setattr("corpora.indexing.load_index", lambda prefix: INDEX)

    def no_sglang(*args, **kwargs):
        raise AssertionError("the hf path asked for sglang")

    monkeypatch.setattr(sglang_serving, "load_sglang_agent", no_sglang)
    loaded = inference.load_agent(_agent("tiny", 3))

    assert isinstance(loaded.engine, HFRolloutEngine)
    assert loaded.engine.batch_size == 1 and loaded.engine.model_name == "tiny"
    assert "sglang" not in sys.modules


# -- the sglang engine's side of the offline Engine API, against a fake `sglang` module ----


def test_the_sglang_engine_over_a_folder_answers_from_what_generate_returns(
    monkeypatch, tiny_model
):
    from engine.agent.engines import build_rollout_engine
    from engine.agent.sglang_engine import SGLangRolloutEngine

    requests = []

    class Engine:  # sglang.Engine's shapes: generate(input_ids=[[...]], ...) -> [{...}]
        def __init__(self, **kwargs):
            self.kwargs, self.loop, self.shutdowns = kwargs, asyncio.new_event_loop(), 0

        def generate(self, input_ids, sampling_params, return_logprob):
            requests.append(([list(row) for row in input_ids], sampling_params, return_logprob))
            assert asyncio.get_event_loop() is self.loop
            # The tiny model's tokenizer knows few words, these among them.
            ids = self.tokenizer.encode("<answer> page 2 </answer>", add_special_tokens=False)
            ids.append(self.eos)
            return [
                {
                    "meta_info": {
                        "output_token_logprobs": [(-0.5, i, None) for i in ids],
                        "finish_reason": {"type": "stop", "matched": self.eos},
                    }
                }
                for _ in input_ids
            ]

        def shutdown(self):
            self.shutdowns += 1

    monkeypatch.setitem(sys.modules, "sglang", types.SimpleNamespace(Engine=Engine))
    engine = build_rollout_engine(
        "sglang", None, None, INDEX, limits=LIMITS, model_name="agent", model_path=tiny_model
    )
    assert isinstance(engine, SGLangRolloutEngine)
    assert engine.engine.kwargs == {"model_path": tiny_model}
    engine.engine.tokenizer, engine.engine.eos = engine.tokenizer, engine.tokenizer.eos_token_id

    answered = []  # from another thread than the one that built it, as the worker's pool
    thread = threading.Thread(
        target=lambda: answered.extend(engine.rollout(["Capital of France?"], SamplingParams()))
    )
    thread.start()
    thread.join(timeout=30)

    ((trajectory,),) = [answered]
    assert (trajectory.answer, trajectory.finish_reason) == ("page 2", "answer")
    assert trajectory.model_name == "agent"
    ((input_ids, params, return_logprob),) = requests
    assert return_logprob and input_ids == [engine.prompt_ids("Capital of France?")]
    assert params[0]["max_new_tokens"] == LIMITS.max_new_tokens and params[0]["no_stop_trim"]

    engine.shutdown()
    engine.shutdown()
    assert engine.engine.shutdowns == 1 and engine.closed
    with pytest.raises(RuntimeError, match="shut down"):
        engine.rollout(["Again?"])
