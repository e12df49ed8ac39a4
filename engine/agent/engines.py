"""The rollout engine a trainer samples with, chosen by the run's config, and how its
weights follow the trainer's.

- "hf" (transformers; CPU or GPU): the engine holds the trainer's own model object, so
  after an optimizer step it already samples from the new weights; or, when rollouts run
  in another precision than the trainer (`agent.precision`), its own copy of the model in
  that precision, into which every update is copied.
- "sglang" (GPU workers; UNVERIFIED, see `sglang_engine`): a separate inference engine
  that loads the base model once and receives the trainer's weights after every update.
"""

from __future__ import annotations

import copy

from engine.agent.hf_engine import HFRolloutEngine, RolloutEngine
from engine.agent.precision import torch_dtype
from engine.agent.tool import SearchTool
from engine.agent.trajectory import Limits

ENGINES = ("hf", "sglang")


def build_rollout_engine(
    kind: str,
    model,
    tokenizer,
    tool: SearchTool,
    *,
    limits: Limits,
    model_name: str,
    precision: str | None = None,
    model_path: str | None = None,
    memory_share: float | None = None,
    **options,
) -> RolloutEngine:
    """The engine named `kind`, over `model` (hf) or a model it loads itself (sglang: from
    `model_path`, by default `model_name`; `model` and `tokenizer` may then be None).
    `precision` ("float32" or "bfloat16", resolved) is what either engine samples in (the hf
    engine float32 and sglang the model's own type when not given: serving);
    `memory_share` the share of its GPU's memory an sglang engine may take for weights and KV
    cache (sglang's own default takes nearly all of it, leaving a trainer beside it none);
    `options` (system_prompt, batch_size) go to either engine as they are."""
    if kind == "hf":
        dtype = torch_dtype(precision or "float32")
        if next(model.parameters()).dtype != dtype:
            # Its own copy in the rollout precision; `sync_weights` keeps it level.
            model = copy.deepcopy(model).to(dtype).eval().requires_grad_(False)
        return HFRolloutEngine(
            model, tokenizer, tool, limits=limits, model_name=model_name, **options
        )
    if kind == "sglang":
        from engine.agent.sglang_engine import SGLangRolloutEngine

        engine_kwargs = dict(options.pop("engine_kwargs", {}))
        if precision is not None:
            engine_kwargs["dtype"] = precision
        if memory_share is not None:
            engine_kwargs["mem_fraction_static"] = memory_share
        return SGLangRolloutEngine(
            model_path or model_name,
            tool,
            limits=limits,
            model_name=model_name,
            engine_kwargs=engine_kwargs,
            **options,
        )
    raise ValueError(f"unknown rollout engine {kind!r}; choose one of {', '.join(ENGINES)}")


def sync_weights(engine: RolloutEngine, model) -> None:
    """Make `engine` sample from `model`'s current weights (after the cold start and after
    every update). A LoRA model is sent merged, under the base model's weight names."""
    if isinstance(engine, HFRolloutEngine):
        if engine.model is model:
            return  # the same object: nothing to send
        state = model.state_dict()
        if state.keys() == engine.model.state_dict().keys():
            engine.load_state_dict(state)  # a copy of the trainer's model (cast on copy)
            return
    if hasattr(model, "merge_and_unload"):
        # peft: merge into a copy's view of the weights without touching the trainer's.
        state = _merged_lora_state(model)
    else:
        state = model.state_dict()
    engine.load_state_dict(state)


def _merged_lora_state(model) -> dict:
    """W + BA for every LoRA-wrapped layer, under the base model's names."""
    import torch

    merged = {}
    with torch.no_grad():
        model.merge_adapter()
        try:
            for name, tensor in model.get_base_model().state_dict().items():
                if "lora_" in name:
                    continue
                merged[name.replace(".base_layer", "")] = tensor.detach().clone()
        finally:
            model.unmerge_adapter()
    return merged
