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

from engine.agent.settings import write_agent_settings


def rng_states() -> dict:
    """Every RNG's state in types `torch.load(weights_only=True)` reads: numpy's key array
    becomes a tensor, so a trainer state file can be loaded without unpickling code."""
    kind, keys, position, has_gauss, cached = np.random.get_state()
    return {
        "python": random.getstate(),
        "numpy": (kind, torch.from_numpy(keys.astype(np.int64)), position, has_gauss, cached),
        "torch": torch.get_rng_state(),
    }


def restore_rng_states(states: dict) -> None:
    random.setstate(states["python"])
    kind, keys, position, has_gauss, cached = states["numpy"]
    keys = np.asarray(keys, dtype=np.int64).astype(np.uint32)
    np.random.set_state((kind, keys, position, has_gauss, cached))
    torch.set_rng_state(states["torch"])


def save_checkpoint(out_dir: Path, step: int, model, tokenizer, state: dict) -> Path:
    final = Path(out_dir) / "checkpoints" / f"step-{step:06d}"
    partial = final.with_name(final.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    try:
        model.save_pretrained(partial / "model")
        tokenizer.save_pretrained(partial / "model")
        if "config" in state:  # the agent's settings travel with its weights
            write_agent_settings(partial / "model", state["config"]["limits"])
        torch.save({**state, "step": step, "rng": rng_states()}, partial / "trainer_state.pt")
    except BaseException:
        # A full disk (or a kill): give back what the half-written checkpoint took, so the
        # previous checkpoint and whatever runs next on this disk have the room.
        shutil.rmtree(partial, ignore_errors=True)
        raise
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


# What checkpoints written before RNG states were stored as tensors hold: numpy's key array.
_OLD_NUMPY_STATE = [np.ndarray, np.dtype, np.dtypes.UInt32DType, np._core.multiarray._reconstruct]


def load_trainer_state(checkpoint: Path) -> dict:
    """The trainer's state, read without running code from the file (`weights_only`): a
    checkpoint may come back from S3, where anyone with write access could have put it."""
    with torch.serialization.safe_globals(_OLD_NUMPY_STATE):
        return torch.load(checkpoint / "trainer_state.pt", weights_only=True, map_location="cpu")
