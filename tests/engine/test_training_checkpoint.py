"""Trainer state files: read back exactly, and never by running code they carry."""

import pickle
import random

import numpy as np
import pytest
import torch

from workers.training.checkpoint import load_trainer_state, restore_rng_states, rng_states

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
