"""The sglang rollout engine for GPU workers. UNVERIFIED: written against sglang's
documented offline Engine API but never run here (no GPU, sglang not installed); it is
kept off the CPU test path and sglang is imported only when this engine is built.

It reuses the protocol loop of `RolloutEngine` (prompts, tool calls, limits, finish
reasons) and replaces only segment generation: each round sends the token ids of every
unfinished trajectory to `sglang.Engine.generate(input_ids=..., return_logprob=True)`,
which batches them itself, and reads back the sampled token ids with their log-probs.

Weights come from the trainer between steps with `update_weights_from_tensor` (same
process or node) or `update_weights_from_disk` (a saved checkpoint folder).

The inference worker (serving.sglang_serving) builds one over a published agent's folder
(its merged weights, loaded by sglang itself) and shuts it down when it lets the agent go.
One engine per process at a time: `shutdown` ends every child process of this process.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

import torch
from transformers import AutoConfig, AutoTokenizer, GenerationConfig

from engine.agent.greedy_rules import rules_on
from engine.agent.hf_engine import RolloutEngine
from engine.agent.models import resolve_model_path
from engine.agent.protocol import SYSTEM_PROMPT
from engine.agent.tool import SearchTool
from engine.agent.trajectory import Limits, SamplingParams


class SGLangRolloutEngine(RolloutEngine):
    """Multi-turn rollouts on an in-process `sglang.Engine`."""

    def __init__(
        self,
        model_path: str,
        tool: SearchTool,
        *,
        limits: Limits | None = None,
        system_prompt: str = SYSTEM_PROMPT,
        batch_size: int = 256,
        model_name: str = "",
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        import sglang  # lazy: the GPU worker image installs it, nothing else needs it

        # A folder (a published agent, a checkpoint), a hub id, or the default model's name.
        model_path = resolve_model_path(model_path)
        tokenizer = AutoTokenizer.from_pretrained(model_path, trust_remote_code=False)
        self.engine = sglang.Engine(model_path=model_path, **(engine_kwargs or {}))
        self.closed = False
        config = getattr(tokenizer, "init_kwargs", {})
        stop_ids = {tokenizer.eos_token_id, *_model_eos_ids(model_path)} - {None}
        super().__init__(
            tokenizer,
            tool,
            stop_ids=stop_ids,
            max_length=config.get("model_max_length") or 1 << 30,
            limits=limits,
            system_prompt=system_prompt,
            batch_size=batch_size,
            model_name=model_name or model_path,
        )

    def update_weights_from_tensor(self, named_tensors: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Push the trainer's current weights (names as in the HF state dict)."""
        self.engine.update_weights_from_tensor(named_tensors=list(named_tensors))

    def load_state_dict(self, state_dict: dict[str, torch.Tensor]) -> None:
        self.update_weights_from_tensor(state_dict.items())

    def update_weights_from_disk(self, model_path: str) -> None:
        """Reload weights from a checkpoint folder written by the trainer."""
        self.engine.update_weights_from_disk(model_path)

    def shutdown(self) -> None:
        """Stop the engine and free its GPU memory (once; later calls do nothing).

        sglang's `Engine.shutdown()` kills every child process of this process
        (`kill_process_tree(os.getpid(), include_parent=False)`), not only this engine's
        scheduler and detokenizer, and blocks until the scheduler has released its GPU
        context: so a process shuts its engine down before it builds the next one."""
        if not self.closed:
            self.closed = True
            self.engine.shutdown()

    def _generate(
        self,
        sequences: list[list[int]],
        generators: list[torch.Generator],
        budgets: list[int],
        stops: list[tuple[str, ...]],
        sampling: SamplingParams,
        groundings: list | None = None,
        questions: list[str] | None = None,
        searched: list[int] | None = None,
    ) -> list[tuple[list[int], list[float], bool]]:
        if any(groundings or []):
            raise ValueError("grounded and row figures need the hf engine's per-token masks")
        if rules_on(self.limits) and sampling.temperature <= 0:
            raise ValueError("the rules of greedy decoding need the hf engine's per-token masks")
        if self.closed:
            raise RuntimeError("this sglang engine was shut down (its agent was unloaded)")
        # `Engine.generate` runs on the event loop the engine made in the thread that built
        # it (`self.loop`), and its TokenizerManager starts its receiving task on the calling
        # thread's current loop at the first request: make them the same in any thread (the
        # inference worker answers in a pool of threads).
        asyncio.set_event_loop(self.engine.loop)
        params = [
            {
                "temperature": sampling.temperature,
                "top_p": sampling.top_p,
                "max_new_tokens": budget,
                "stop": list(stop),
                "no_stop_trim": True,  # keep the tag in the output: the trajectory needs it
                # One seed per segment, drawn from the trajectory's own stream.
                "sampling_seed": int(torch.randint(0, 2**31 - 1, (1,), generator=generator)),
            }
            for budget, stop, generator in zip(budgets, stops, generators, strict=True)
        ]
        outputs = self.engine.generate(
            input_ids=sequences, sampling_params=params, return_logprob=True
        )
        segments = []
        for output in outputs:
            meta = output["meta_info"]
            # output_token_logprobs: one (logprob, token_id, text) per generated token.
            pairs = meta["output_token_logprobs"]
            ids = [int(token) for _, token, *_ in pairs]
            logprobs = [float(lp) for lp, *_ in pairs]
            finish = meta.get("finish_reason") or {}
            ended_by_eos = (
                bool(ids)
                and ids[-1] in self.stop_ids
                or (finish.get("type") == "stop" and finish.get("matched") in self.stop_ids)
            )
            segments.append((ids, logprobs, ended_by_eos))
        return segments


def _model_eos_ids(model_path: str) -> set[int]:
    """The end-of-sequence ids sglang stops on besides the tokenizer's: the union of the
    model config's and the generation config's `eos_token_id` (sglang's
    `ModelConfig._get_hf_eos_token_id`), so that a segment ended by one counts as ended."""
    ids: set[int] = set()
    for load in (AutoConfig.from_pretrained, GenerationConfig.from_pretrained):
        try:
            configured = getattr(load(model_path), "eos_token_id", None)
        except OSError:  # no generation_config.json
            continue
        ids.update(configured if isinstance(configured, list) else [configured])
    return ids - {None}
