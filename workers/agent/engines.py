"""The rollout engine a trainer samples with, chosen by the run's config, and how its
weights follow the trainer's.

- "hf" (transformers; CPU or GPU): the engine holds the trainer's own model object, so
  after an optimizer step it already samples from the new weights.
- "sglang" (GPU workers; UNVERIFIED, see `sglang_engine`): a separate inference engine
  that loads the base model once and receives the trainer's weights after every update.
"""

from __future__ import annotations

from workers.agent.hf_engine import HFRolloutEngine, RolloutEngine
from workers.agent.tool import SearchTool
from workers.agent.trajectory import Limits

ENGINES = ("hf", "sglang")


def build_rollout_engine(
    kind: str, model, tokenizer, tool: SearchTool, *, limits: Limits, model_name: str
) -> RolloutEngine:
    """The engine named `kind`, over `model` (hf) or a model it loads from `model_name`."""
    if kind == "hf":
        return HFRolloutEngine(model, tokenizer, tool, limits=limits, model_name=model_name)
    if kind == "sglang":
        from workers.agent.sglang_engine import SGLangRolloutEngine

        return SGLangRolloutEngine(model_name, tool, limits=limits)
    raise ValueError(f"unknown rollout engine {kind!r}; choose one of {', '.join(ENGINES)}")


def sync_weights(engine: RolloutEngine, model) -> None:
    """Make `engine` sample from `model`'s current weights (after the cold start and after
    every update). A LoRA model is sent merged, under the base model's weight names."""
    if isinstance(engine, HFRolloutEngine) and engine.model is model:
        return  # the same object: nothing to send
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
