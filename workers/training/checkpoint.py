"""Checkpoints: everything needed to continue a run exactly where it stopped.

`DIR/checkpoints/step-NNNNNN/` holds the model (Hugging Face format; a LoRA run stores its
adapter), the tokenizer, the agent's settings (`agent.json`), and `trainer_state.pt`:
optimizer, scheduler, RNG states, the data cursor, curriculum state and the step. Written
to a temporary folder and renamed, so a run killed mid-save leaves the previous one intact.
"""

import random
import shutil
from pathlib import Path

import numpy as np
import torch

from workers.agent.settings import write_agent_settings


def rng_states() -> dict:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }


def restore_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    np.random.set_state(states["numpy"])
    torch.set_rng_state(states["torch"])


def save_checkpoint(out_dir: Path, step: int, model, tokenizer, state: dict) -> Path:
    final = Path(out_dir) / "checkpoints" / f"step-{step:06d}"
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    model.save_pretrained(partial / "model")
    tokenizer.save_pretrained(partial / "model")
    if "config" in state:  # the agent's settings travel with its weights
        write_agent_settings(partial / "model", state["config"]["limits"])
    torch.save({**state, "step": step, "rng": rng_states()}, partial / "trainer_state.pt")
    shutil.rmtree(final, ignore_errors=True)
    partial.rename(final)
    return final


def latest_checkpoint(out_dir: Path) -> Path | None:
    found = sorted((Path(out_dir) / "checkpoints").glob("step-[0-9]*[0-9]"))
    return found[-1] if found else None


def prune_checkpoints(out_dir: Path, keep_last: int) -> list[Path]:
    """Delete all but the last `keep_last` checkpoints (0 keeps every one): each holds the
    optimizer's state too, and a long run would otherwise fill the disk. Returns those deleted."""
    if keep_last <= 0:
        return []
    found = sorted((Path(out_dir) / "checkpoints").glob("step-[0-9]*[0-9]"))
    old = found[:-keep_last]
    for folder in old:
        shutil.rmtree(folder, ignore_errors=True)
    return old


def load_trainer_state(checkpoint: Path) -> dict:
    # Our own file, written by save_checkpoint: it holds numpy RNG state, hence weights_only=False.
    return torch.load(checkpoint / "trainer_state.pt", weights_only=False)
