"""Trainer state files: read back exactly, and never by running code they carry; a
checkpoint the disk had no room for leaves the previous one as the last."""

import errno
import pickle
import random

import numpy as np
import pytest
import torch

from engine.training.checkpoint import (
    latest_checkpoint,
    load_trainer_state,
    restore_rng_states,
    rng_states,
    save_checkpoint,
)

RAN = []


class Payload:
    """What an attacker with write access to the artifacts bucket would plant."""

    def __reduce__(self):
        return (RAN.append, ("code ran",))


def test_a_trainer_state_that_would_run_code_is_refused(tmp_path):
    torch.save({"step": 1, "sampler": Payload()}, tmp_path / "trainer_state.pt")

    with pytest.raises(pickle.UnpicklingError):
        load_trainer_state(tmp_path)
    assert RAN == []


def test_every_rng_continues_exactly_after_a_round_trip_through_the_file(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    torch.save({"rng": rng_states()}, tmp_path / "trainer_state.pt")
    expected = (random.random(), np.random.rand(), torch.rand(1).item())

    restore_rng_states(load_trainer_state(tmp_path)["rng"])

    assert (random.random(), np.random.rand(), torch.rand(1).item()) == expected


def test_a_state_written_before_rng_states_were_tensors_still_loads(tmp_path):
    np.random.seed(4)
    old = {
        "python": random.getstate(),
        "numpy": np.random.get_state(),
        "torch": torch.get_rng_state(),
    }
    torch.save({"rng": old, "step": 7}, tmp_path / "trainer_state.pt")
    expected = np.random.rand()

    state = load_trainer_state(tmp_path)
    restore_rng_states(state["rng"])

    assert state["step"] == 7 and np.random.rand() == expected


class Saves:
    """A model or tokenizer whose files are a few bytes; `full` makes the disk run out."""

    def __init__(self, full: bool = False):
        self.full = full

    def save_pretrained(self, folder):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "weights.bin").write_bytes(b"w" * 64)
        if self.full:
            raise OSError(errno.ENOSPC, "No space left on device", str(folder))


def test_a_checkpoint_the_disk_had_no_room_for_leaves_the_last_one_and_no_debris(tmp_path):
    save_checkpoint(tmp_path, 1, Saves(), Saves(), {"cursor": 1})

    with pytest.raises(OSError) as raised:
        save_checkpoint(tmp_path, 2, Saves(), Saves(full=True), {"cursor": 2})

    assert raised.value.errno == errno.ENOSPC
    assert latest_checkpoint(tmp_path).name == "step-000001"  # a resume starts from step 1
    assert load_trainer_state(latest_checkpoint(tmp_path))["cursor"] == 1
    # The half-written step 2 is gone: the room it took is free again.
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["step-000001"]
