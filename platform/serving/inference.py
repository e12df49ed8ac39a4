"""The inference worker's side of /v1: published agents loaded once, kept in a bounded LRU
cache, and asked one question each.

Runs in the process that serves the "inference" Celery queue (`config.tasks.agent_chat`),
never in the web process: a loaded agent is a model in memory, and the web workers stay
small. The cache is per process; the worker runs its tasks in threads so that they share
it (`--pool threads`). One agent answers one question at a time (its engine keeps state
while it generates); different agents answer in parallel.

An agent is its published folder (model files and `agent.json`, downloaded from S3 once
per machine) plus the project index its run searched (engine.search.store.IndexCache).
The cache key holds the checkpoint id and the folder's prefix, both immutable.

An agent trained with LoRA whose published folder keeps its adapter (`adapter/`) and whose
base model (agent.json's `base_model`) is on the operator's allowlist shares that base:
the base loads once per process (`SharedBases`, by model key) and each such agent's
adapter attaches to it by name (peft). One adapter is active at a time, so the agents on
one base answer one at a time (they hold the base's lock); the cache counts the base once.
Other agents load whole, their merged weights.

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

from core.local_copies import AGENT_COPIES, copies_root
from engine.search.store import SOURCE, evict_copies
from runs import artifacts
from serving import sglang_serving


@dataclass
class LoadedAgent:
    engine: object  # engine.agent.hf_engine.HFRolloutEngine
    index: object  # engine.search.index.SearchIndex
    limits: object  # engine.agent.trajectory.Limits, as trained
    lock: threading.Lock  # a shared base's lock for an agent on one
    load_seconds: float
    shared: SharedBase | None = None  # the base model its adapter is attached to
    adapter: str | None = None  # the adapter's name on that base

    @property
    def model_key(self) -> object:
        """What it holds in memory, as the cache's capacity counts: a shared base once."""
        return ("base", self.shared.key) if self.shared else ("agent", id(self))

    def activate(self) -> bool:
        """Make this agent's adapter the active one (under `lock`); False once it was taken
        off its base, or its sglang engine shut down (evicted while a request waited for it)."""
        if self.shared is None:
            return _up(self)
        return self.shared.activate(self.adapter)

    def release(self) -> None:
        """Called when the cache lets it go: take its adapter off the shared base."""
        if self.shared is not None:
            self.shared.detach(self.adapter)


class AgentCache:
    """At most `capacity` loaded models (agents, a base shared by several agents counted
    once); the least recently used agent goes first, until the models fit."""

    def __init__(self, capacity: int, load: Callable[[dict], LoadedAgent]):
        self.capacity = max(capacity, 1)
        self._load = load
        self._agents: OrderedDict[tuple, LoadedAgent] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}
        self.loads = 0

    def models(self) -> int:
        """How many models the cached agents hold (a shared base once)."""
        with self._lock:
            return len({loaded.model_key for loaded in self._agents.values()})

    def get(self, agent: dict) -> tuple[LoadedAgent, bool]:
        """The loaded agent and whether it was loaded by this call."""
        key = (agent["checkpoint_id"], agent["published_prefix"], agent.get("base_model") or "")
        with self._lock:
            if key in self._agents and _up(self._agents[key]):
                self._agents.move_to_end(key)
                return self._agents[key], False
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one load per agent, however many requests wait for it
            with self._lock:
                if key in self._agents and _up(self._agents[key]):
                    self._agents.move_to_end(key)
                    return self._agents[key], False
            loaded = self._load(agent)
            evicted = []
            with self._lock:
                self.loads += 1
                self._agents[key] = loaded
                while len({a.model_key for a in self._agents.values()}) > self.capacity:
                    evicted.append(self._agents.popitem(last=False)[1])
                self._loading.pop(key, None)
            for gone in evicted:  # outside the cache's lock: it may wait for a shared base
                gone.release()
            return loaded, True


class SharedBase:
    """One base model loaded once, with the adapters of the agents trained from it attached
    by name; `lock` is held by whoever generates with it (one adapter is active at a time)
    or changes its adapters. `users` counts the loaded agents per adapter: an agent loaded
    again before its evicted copy let go keeps its adapter."""

    def __init__(self, key: str, name: str, owner: SharedBases):
        self.key, self.name, self._owner = key, name, owner
        self.lock = threading.Lock()
        self.model = None  # the PeftModel, once the first adapter is attached
        self.tokenizer = None
        self.users: dict[str, int] = {}  # guarded by the owner's lock

    def _load(self, adapter: str, path: Path, load_base: Callable[[str], tuple]) -> None:
        from peft import PeftModel

        with self.lock:
            if self.model is None:
                base, self.tokenizer = load_base(self.name)
                self.model = PeftModel.from_pretrained(base, str(path), adapter_name=adapter)
            elif adapter not in self.model.peft_config:
                self.model.load_adapter(str(path), adapter_name=adapter)
            self.model.eval()

    def activate(self, adapter: str) -> bool:
        """Make `adapter` the active one (the caller holds `lock`); False once it is off."""
        with self._owner._lock:
            if adapter not in self.users:
                return False
        if adapter not in self.model.peft_config:
            return False
        if self.model.active_adapter != adapter:
            self.model.set_adapter(adapter)
        return True

    def detach(self, adapter: str) -> None:
        """One agent on `adapter` fewer; the adapter goes with its last agent, and the base
        goes from this process's shared bases with its last adapter (its memory with the
        last reference)."""
        with self.lock, self._owner._lock:
            left = self.users.get(adapter, 0) - 1
            if left > 0:
                self.users[adapter] = left
                return
            self.users.pop(adapter, None)
            if not self.users:
                if self._owner._bases.get(self.key) is self:
                    del self._owner._bases[self.key]
            elif self.model is not None and adapter in self.model.peft_config:
                self.model.delete_adapter(adapter)


class SharedBases:
    """The shared base models of one process, by model key (runs.services.model_key)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._bases: dict[str, SharedBase] = {}

    def attach(
        self, name: str, adapter: str, path: Path, load_base: Callable[[str], tuple]
    ) -> SharedBase:
        """The shared base `name` (loaded by `load_base` the first time) with the adapter in
        `path` attached as `adapter`."""
        from runs.services import model_key

        key = model_key(name)
        with self._lock:
            shared = self._bases.get(key)
            if shared is None:
                shared = self._bases[key] = SharedBase(key, name, self)
            shared.users[adapter] = shared.users.get(adapter, 0) + 1
        try:
            shared._load(adapter, path, load_base)
        except BaseException:
            shared.detach(adapter)
            raise
        return shared

    def __len__(self) -> int:
        with self._lock:
            return len(self._bases)


shared_bases = SharedBases()


def _up(loaded: LoadedAgent) -> bool:
    """Whether a cached agent can answer: not once its sglang engine was shut down to load
    another agent's (serving.sglang_serving); it then loads again."""
    return not getattr(loaded.engine, "closed", False)


def _published_folder(prefix: str) -> Path:
    """The published folder's model files on this machine, downloaded once (immutable).
    The disk keeps the `SLEUTH_PUBLISHED_ON_DISK` most recently used folders: past that a
    new download deletes the least recently used, idle for ten minutes (an agent loaded in
    memory keeps answering: its weights are read at load)."""
    root = copies_root(AGENT_COPIES)
    target = root / hashlib.sha256(prefix.encode()).hexdigest()[:24]
    if (target / ".complete").is_file():
        os.utime(target / ".complete")  # used now: the last the disk lets go
        return target
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".partial-"))
    try:
        artifacts.download_folder(prefix, staging)
        shutil.rmtree(staging / "agent" / "index", ignore_errors=True)  # the index comes apart
        (staging / SOURCE).write_text(prefix)  # what a purge of a deleted run looks for
        (staging / ".complete").write_text(prefix)
        try:
            os.rename(staging, target)
        except OSError:  # another thread or process won the race
            if not (target / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    evict_copies(root, target, settings.SLEUTH_PUBLISHED_ON_DISK, min_idle_seconds=600.0)
    return target


class BaseModelRefused(ValueError):
    """A base model that is not on the operator's allowlist: never loaded."""


def _base_model(agent: dict) -> str | None:
    """The untrained model to answer with instead of the agent's own, if one is asked for;
    only a name the operator offers (runs.services.allowed_models), never a path or hub id
    that only the message names."""
    from runs.services import model_allowed

    name = agent.get("base_model")
    if not name:
        return None
    if not model_allowed(name):
        raise BaseModelRefused(f"the base model {str(name)[:100]!r} is not on the allowlist")
    return name


def _shared_base(folder: Path, agent_settings) -> str | None:
    """The base model a published LoRA agent can share: its adapter is in the folder and the
    base it was trained from is on the operator's allowlist; else None (it loads whole)."""
    from engine.agent.settings import adapter_folder
    from runs.services import model_allowed

    if agent_settings is None or not agent_settings.base_model or adapter_folder(folder) is None:
        return None
    return agent_settings.base_model if model_allowed(agent_settings.base_model) else None


def _adapter_name(agent: dict) -> str:
    """A name for the agent's adapter on its base (a module key: no dots)."""
    key = f"{agent['checkpoint_id']}:{agent['published_prefix']}"
    return "agent_" + hashlib.sha256(key.encode()).hexdigest()[:16]


def load_agent(agent: dict) -> LoadedAgent:
    """Load a published agent's model, its settings and its index (with `base_model`, that
    untrained model in place of the agent's trained weights, with the same settings; a LoRA
    agent whose base is allowed, its adapter on that base shared with the others)."""
    import torch

    from corpora.indexing import load_index
    from engine.agent.greedy_rules import masks_tokens
    from engine.agent.hf_engine import HFRolloutEngine
    from engine.agent.models import load_model
    from engine.agent.settings import adapter_folder, read_agent_settings
    from engine.agent.trajectory import Limits

    started = time.perf_counter()
    base_model = _base_model(agent)  # refused before anything downloads or loads
    folder = _published_folder(agent["published_prefix"])
    agent_settings = read_agent_settings(folder)
    limits = agent_settings.limits if agent_settings else Limits()
    # GPU workers: sglang loads the weights; an agent whose answers are grounded, or whose
    # greedy decoding keeps rules (`agent.greedy_rules`), needs the hf engine's per-token
    # masks, so it is served as it was measured.
    if settings.SLEUTH_SERVING_ENGINE == "sglang" and not masks_tokens(limits):
        return sglang_serving.load_sglang_agent(
            agent, base_model or str(folder), agent_settings, limits, started, LoadedAgent
        )
    device = "cuda" if torch.cuda.is_available() else "cpu"
    shared_name = None if base_model else _shared_base(folder, agent_settings)
    shared = adapter = None
    if shared_name:
        adapter = _adapter_name(agent)
        shared = shared_bases.attach(
            shared_name,
            adapter,
            adapter_folder(folder),
            lambda name: load_model(name, device=device),
        )
        model, tokenizer = shared.model, shared.tokenizer
    else:
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
        lock=shared.lock if shared else threading.Lock(),
        load_seconds=time.perf_counter() - started,
        shared=shared,
        adapter=adapter,
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


class _SearchReporter:
    """Told by the engine of each search as the agent makes it (the hits it was shown),
    it keeps them and tells `on_search`."""

    def __init__(self, on_search: Callable[[dict], None] | None):
        self.on_search, self.searches = on_search, []

    def __call__(self, query: str, hits: list) -> None:
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
    from engine.agent.trajectory import SamplingParams

    started = time.perf_counter()
    for _ in range(3):  # an agent on a shared base evicted while this waited: get it again
        loaded, was_loaded = agent_cache().get(agent)
        limits = loaded.limits
        if max_tokens is not None:
            limits = replace(limits, max_new_tokens=max(1, min(max_tokens, limits.max_new_tokens)))
        reporter = _SearchReporter(on_search)
        with loaded.lock:
            if not loaded.activate():
                continue
            engine = loaded.engine
            engine.on_results, engine.limits = reporter, limits
            try:
                (trajectory,) = engine.rollout(
                    [question], SamplingParams(temperature=temperature, seed=seed)
                )
            finally:
                engine.on_results = None
            break
    else:
        raise RuntimeError("the agent was evicted from the inference cache three times running")
    return {
        "answer": trajectory.answer,
        "finish_reason": trajectory.finish_reason,
        "searches": reporter.searches,
        "prompt_tokens": trajectory.prompt_length,
        "completion_tokens": trajectory.model_tokens,
        "cache": "miss" if was_loaded else "hit",
        "load_seconds": round(loaded.load_seconds, 3) if was_loaded else 0.0,
        "seconds": round(time.perf_counter() - started, 3),
    }
