"""Assemble a published folder from a trained model folder and the run's index."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from engine.agent.settings import ADAPTER_DIR, adapter_folder, write_agent_settings
from engine.publishing.bundle import BUNDLED_MODULES, standalone_source
from engine.publishing.card import model_card

_SCRIPT = Path(__file__).with_name("run_agent.py")
# Hugging Face files worth shipping; trainer state and optimizer never are.
_MODEL_FILES = ("*.safetensors", "*.json", "tokenizer.model", "*.txt", "*.jinja")


@dataclass
class PublishInfo:
    """What the model card says about the run."""

    name: str
    base_model: str
    config: dict  # TrainConfig.to_dict()
    data_summary: dict = field(default_factory=dict)
    eval_report: dict | None = None


def publish_folder(
    model_dir: str | Path, index_dir: str | Path, info: PublishInfo, out_dir: str | Path
) -> Path:
    """Write OUT/ with the model files, README.md, eval.json and agent/ (index, script,
    agent.json), and `adapter/` when `model_dir` has one (a LoRA run's adapter, served on a
    shared base model). `model_dir` is a Hugging Face folder (model and tokenizer)."""
    model_dir, out = Path(model_dir), Path(out_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not a Hugging Face model folder (no config.json)")
    out.mkdir(parents=True, exist_ok=True)
    for pattern in _MODEL_FILES:
        for path in model_dir.glob(pattern):
            shutil.copy2(path, out / path.name)
    adapter = adapter_folder(model_dir)
    if adapter is not None:
        shutil.copytree(adapter, out / ADAPTER_DIR, dirs_exist_ok=True)
    if not (out / "generation_config.json").exists():
        (out / "generation_config.json").write_text(json.dumps({"do_sample": False}, indent=2))
    agent = out / "agent"
    shutil.copytree(index_dir, agent / "index", dirs_exist_ok=True)
    shutil.copy2(_SCRIPT, agent / "run_agent.py")
    for module, filename in BUNDLED_MODULES.items():  # the engine's own search and rules
        (agent / filename).write_text(standalone_source(module))
    limits = info.config.get("limits", {})
    write_agent_settings(agent, limits, base_model=info.base_model)
    # beside the weights too, as in every checkpoint
    write_agent_settings(out, limits, base_model=info.base_model)
    (out / "eval.json").write_text(json.dumps(info.eval_report or {}, indent=2))
    card = model_card(
        name=info.name,
        base_model=info.base_model,
        data_summary=info.data_summary,
        eval_report=info.eval_report,
        config=info.config,
        limits=limits,
    )
    (out / "README.md").write_text(card)
    return out
