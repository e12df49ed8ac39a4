"""Policies to compare: `echo`, `echo@K`, `base`, a checkpoint folder, `openai:<model>`.

Every policy answers through the same protocol, search tool and limits, so differences in
the report come from the policy alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from engine.agent.hf_engine import HFRolloutEngine
from engine.agent.tool import SearchTool
from engine.agent.trajectory import Limits, SamplingParams, Trajectory


class PolicySpecError(ValueError):
    """A --policy entry that names nothing runnable."""


class Policy(Protocol):
    def rollout(self, questions: list[str], sampling: SamplingParams) -> list[Trajectory]: ...


@dataclass
class HFPolicy:
    """A transformers model as the agent; with `echo_k`, the echo baseline instead."""

    engine: HFRolloutEngine
    echo_k: int | None = None

    def rollout(self, questions: list[str], sampling: SamplingParams) -> list[Trajectory]:
        return self.engine.rollout(questions, sampling, echo_k=self.echo_k)


_ECHO = re.compile(r"^echo(?:@(\d+))?$")


def build_policy(
    spec: str,
    *,
    tool: SearchTool,
    limits: Limits,
    load_model: Callable[[str | None], tuple],
    base_model: str | None = None,
    batch_size: int = 16,
    openai_base_url: str | None = None,
    openai_api_key: str | None = None,
) -> Policy:
    """Turn one --policy entry into a runnable policy. `load_model(name)` returns
    (model, tokenizer) and may cache, so echo and base share one copy of the model."""
    if spec.startswith("openai:"):
        name = spec.removeprefix("openai:")
        if not name:
            raise PolicySpecError("openai: needs a model name, e.g. openai:gpt-4o-mini")
        from openai import OpenAI

        from engine.agent.openai_agent import OpenAIAgent

        base_url = openai_base_url or os.environ.get("OPENAI_BASE_URL")
        api_key = openai_api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key and not base_url:
            raise PolicySpecError(
                f"{spec} needs an endpoint: set OPENAI_API_KEY (and OPENAI_BASE_URL for a "
                "compatible server) or pass --openai-base-url"
            )
        client = OpenAI(base_url=base_url, api_key=api_key or "none", max_retries=2)
        return OpenAIAgent(client, name, tool, limits=limits)
    echo = _ECHO.match(spec)
    if echo:
        k = int(echo.group(1)) if echo.group(1) else limits.results_per_search
        model, tokenizer = load_model(base_model)
        engine = HFRolloutEngine(
            model,
            tokenizer,
            tool,
            limits=limits,
            batch_size=batch_size,
            model_name=base_model or "default",
        )
        return HFPolicy(engine, echo_k=k)
    if spec == "base":
        name = base_model
    elif Path(spec).is_dir():
        name = spec
    else:
        raise PolicySpecError(
            f"unknown policy {spec!r}: use echo, echo@K, base, openai:MODEL or a checkpoint folder"
        )
    model, tokenizer = load_model(name)
    engine = HFRolloutEngine(
        model, tokenizer, tool, limits=limits, batch_size=batch_size, model_name=name or "default"
    )
    return HFPolicy(engine)
