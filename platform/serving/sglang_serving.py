"""The inference worker on sglang (`SLEUTH_SERVING_ENGINE = "sglang"`, GPU workers with
sglang installed). UNVERIFIED: written against sglang's offline Engine API
(`sglang.Engine`, see engine.agent.sglang_engine) and never run here (no GPU); the CPU
tests (tests/platform/test_inference_engine_choice.py) check the loader and the engine
against stand-ins for the builder and for sglang, which they never import.

sglang loads a published agent's merged weights from its folder itself (no transformers
copy of the model); the settings (system prompt, limits) and the index are the ones the
transformers path uses. One engine per worker process at a time: an engine reserves most
of the GPU's memory for its KV cache (sglang's `mem_fraction_static`), and
`Engine.shutdown()` ends every child process of the process, another engine's too. So the
engine in memory is shut down, once the answer it is giving is done, before the next
agent's loads; the worker's cache loads a shut-down agent again when it is next asked for
(serving.inference._up), and SLEUTH_SERVING_MAX_AGENTS does not apply.
"""

from __future__ import annotations

import threading
import time

_lock = threading.Lock()  # one load at a time, with the shutdown of the engine before it
_live: list = []  # the loaded agent (serving.inference.LoadedAgent) whose engine is up


def load_sglang_agent(
    agent: dict, model_path: str, agent_settings, limits, started: float, loaded_agent
):
    """`agent` (serving.inference.load_agent's argument) on an sglang engine over
    `model_path` (its published folder, or the allowed base model asked for instead), held
    as `loaded_agent` makes it (serving.inference.LoadedAgent, given by the caller: the
    inference module imports this one, never the other way)."""
    from corpora.indexing import load_index
    from engine.agent.engines import build_rollout_engine

    index = load_index(agent["index_prefix"])
    with _lock:
        while _live:
            shut_down(_live.pop())
        engine = build_rollout_engine(
            "sglang",
            None,
            None,
            index,
            limits=limits,
            model_name=agent["name"],
            model_path=model_path,
            batch_size=1,
            **({"system_prompt": agent_settings.system_prompt} if agent_settings else {}),
        )
        loaded = loaded_agent(
            engine=engine,
            index=index,
            limits=limits,
            lock=threading.Lock(),
            load_seconds=time.perf_counter() - started,
        )
        _live.append(loaded)
    return loaded


def shut_down(loaded) -> None:
    """Stop a loaded agent's engine and free its GPU memory, after the answer it is giving
    (a request that got it from the cache before then loads it again: LoadedAgent.activate)."""
    with loaded.lock:
        loaded.engine.shutdown()
