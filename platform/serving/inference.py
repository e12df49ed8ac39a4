"""The inference worker's side of /v1: published agents loaded once, kept in a bounded LRU
cache, and asked one question each.

Runs in the process that serves the "inference" Celery queue (`workers.tasks.agent_chat`),
never in the web process: a loaded agent is a model in memory, and the web workers stay
small. The cache is per process; the worker runs its tasks in threads so that they share
it (`--pool threads`). One agent answers one question at a time (its engine keeps state
while it generates); different agents answer in parallel.

An agent is its published folder (model files and `agent.json`, downloaded from S3 once
per machine) plus the project index its run searched (workers.search.store.IndexCache).
The cache key holds the checkpoint id and the folder's prefix, both immutable.

The playground's base model is an agent too: the run's published settings (system prompt,
limits) and index with the untrained model the run started from (`base_model`, checked
against the operator's allowlist here again before it loads), cached under its own key.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from django.conf import settings

from runs import artifacts


@dataclass
class LoadedAgent:
    engine: object  # workers.agent.hf_engine.HFRolloutEngine
    index: object  # workers.search.index.SearchIndex
    limits: object  # workers.agent.trajectory.Limits, as trained
    lock: threading.Lock
    load_seconds: float


class AgentCache:
    """At most `capacity` loaded agents; the least recently used one goes first."""

    def __init__(self, capacity: int, load: Callable[[dict], LoadedAgent]):
        self.capacity = max(capacity, 1)
        self._load = load
        self._agents: OrderedDict[tuple, LoadedAgent] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}
        self.loads = 0

    def get(self, agent: dict) -> tuple[LoadedAgent, bool]:
        """The loaded agent and whether it was loaded by this call."""
        key = (agent["checkpoint_id"], agent["published_prefix"], agent.get("base_model") or "")
        with self._lock:
            if key in self._agents:
                self._agents.move_to_end(key)
                return self._agents[key], False
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one load per agent, however many requests wait for it
            with self._lock:
                if key in self._agents:
                    self._agents.move_to_end(key)
                    return self._agents[key], False
            loaded = self._load(agent)
            with self._lock:
                self.loads += 1
                self._agents[key] = loaded
                while len(self._agents) > self.capacity:
                    self._agents.popitem(last=False)
                self._loading.pop(key, None)
            return loaded, True


def _published_folder(prefix: str) -> Path:
    """The published folder's model files on this machine, downloaded once (immutable)."""
    root = artifacts.work_dir() / "serving"
    target = root / hashlib.sha256(prefix.encode()).hexdigest()[:24]
    if (target / ".complete").is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".partial-"))
    try:
        artifacts.download_folder(prefix, staging)
        shutil.rmtree(staging / "agent" / "index", ignore_errors=True)  # the index comes apart
        (staging / ".complete").write_text(prefix)
        try:
            os.rename(staging, target)
        except OSError:  # another thread or process won the race
            if not (target / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


class BaseModelRefused(ValueError):
    """A base model that is not on the operator's allowlist: never loaded."""


def _base_model(agent: dict) -> str | None:
    """The untrained model to answer with instead of the agent's own, if one is asked for;
    only a name the operator offers (runs.services.allowed_models), never a path or hub id
    that only the message names."""
    from runs.services import allowed_models, model_key

    name = agent.get("base_model")
    if not name:
        return None
    if model_key(name) not in allowed_models():
        raise BaseModelRefused(f"the base model {str(name)[:100]!r} is not on the allowlist")
    return name


def load_agent(agent: dict) -> LoadedAgent:
    """Load a published agent's model, its settings and its index (with `base_model`, that
    untrained model in place of the agent's trained weights, with the same settings)."""
    import torch

    from corpora.indexing import load_index
    from workers.agent.hf_engine import HFRolloutEngine
    from workers.agent.models import load_model
    from workers.agent.settings import read_agent_settings
    from workers.agent.trajectory import Limits

    started = time.perf_counter()
    base_model = _base_model(agent)  # refused before anything downloads or loads
    folder = _published_folder(agent["published_prefix"])
    agent_settings = read_agent_settings(folder)
    limits = agent_settings.limits if agent_settings else Limits()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    model, tokenizer = load_model(base_model or str(folder), device=device)
    index = load_index(agent["index_prefix"])
    engine = HFRolloutEngine(
        model,
        tokenizer,
        index,
        limits=limits,
        batch_size=1,
        model_name=agent["name"],
        **({"system_prompt": agent_settings.system_prompt} if agent_settings else {}),
    )
    return LoadedAgent(
        engine=engine,
        index=index,
        limits=limits,
        lock=threading.Lock(),
        load_seconds=time.perf_counter() - started,
    )


_cache: AgentCache | None = None
_cache_lock = threading.Lock()


def agent_cache() -> AgentCache:
    global _cache
    with _cache_lock:
        if _cache is None:
            _cache = AgentCache(settings.SLEUTH_SERVING_MAX_AGENTS, load_agent)
        return _cache


SNIPPET = 300  # characters of each found chunk reported with a search


class _ReportingTool:
    """The index, telling `on_search` about each search as the agent makes it."""

    def __init__(self, index, on_search: Callable[[dict], None] | None):
        self.index, self.on_search, self.searches = index, on_search, []

    def search(self, query: str, k: int = 5):
        hits = self.index.search(query, k=k)
        self.searches.append(
            {
                "query": query,
                "results": [
                    {"id": h.chunk_id, "document": h.doc, "page": h.page, "text": h.text[:SNIPPET]}
                    for h in hits
                ],
            }
        )
        if self.on_search is not None:
            self.on_search(list(self.searches))
        return hits


def agent_answer(
    *,
    agent: dict,
    question: str,
    temperature: float = 0.0,
    seed: int = 0,
    max_tokens: int | None = None,
    on_search: Callable[[list[dict]], None] | None = None,
) -> dict:
    """Run the agent's search loop on `question`: its answer, searches and token counts.

    `agent` is serving.selectors.PublishedAgent's fields (checkpoint_id, published_prefix,
    index_prefix, name). `max_tokens` can only lower the limit the agent was trained with.
    """
    from workers.agent.trajectory import SamplingParams

    started = time.perf_counter()
    loaded, was_loaded = agent_cache().get(agent)
    limits = loaded.limits
    if max_tokens is not None:
        limits = replace(limits, max_new_tokens=max(1, min(max_tokens, limits.max_new_tokens)))
    tool = _ReportingTool(loaded.index, on_search)
    with loaded.lock:
        engine = loaded.engine
        engine.tool, engine.limits = tool, limits
        try:
            (trajectory,) = engine.rollout(
                [question], SamplingParams(temperature=temperature, seed=seed)
            )
        finally:
            engine.tool = loaded.index
    return {
        "answer": trajectory.answer,
        "finish_reason": trajectory.finish_reason,
        "searches": tool.searches,
        "prompt_tokens": trajectory.prompt_length,
        "completion_tokens": trajectory.model_tokens,
        "cache": "miss" if was_loaded else "hit",
        "load_seconds": round(loaded.load_seconds, 3) if was_loaded else 0.0,
        "seconds": round(time.perf_counter() - started, 3),
    }
