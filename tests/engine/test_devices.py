"""What a run needs and what a worker holds (issue 69, routing by worker kind): the one test
of "can this worker hold that run", an operator's SLEUTH_WORKER_DEVICES, and the presets'
needs."""

import pytest

from engine import devices as devices_module
from engine.devices import Devices, Needs, parse_devices, worker_devices
from engine.training.presets import PRESETS, UnknownPreset, preset_needs

CPU = Devices(memory_gib=32)
ONE_GPU = Devices(gpus=1, gpu_memory_gib=24, memory_gib=64)
TWO_GPUS = Devices(gpus=2, gpu_memory_gib=80, memory_gib=256)


@pytest.mark.parametrize(
    ("needs", "holders"),
    [
        (Needs("cpu"), {"cpu", "one", "two"}),  # hardware-wise: CPU runs go anywhere
        (Needs("cpu", memory_gib=48), {"one", "two"}),
        (Needs("gpu", 1), {"one", "two"}),  # a 2-GPU worker takes 1-GPU runs
        (Needs("gpu", 2), {"two"}),
        (Needs("gpu", 1, memory_gib=40), {"two"}),  # 24 GiB cards are too small
        (Needs("gpu", 4), set()),
    ],
)
def test_a_worker_holds_a_run_when_it_has_the_devices_and_memory(needs, holders):
    workers = {"cpu": CPU, "one": ONE_GPU, "two": TWO_GPUS}

    held = {name for name, worker in workers.items() if worker.refusal(needs) is None}

    assert held == holders


def test_a_refusal_says_what_the_worker_has_and_what_the_run_needs():
    assert CPU.refusal(Needs("gpu", 2)) == "it has no GPU; the run needs 2 GPUs"
    assert ONE_GPU.refusal(Needs("gpu", 1, memory_gib=40)) == (
        "its GPUs have 24 GiB each; the run needs 40 GiB each"
    )
    assert CPU.refusal(Needs("cpu", memory_gib=64)) == (
        "it has 32 GiB of memory; the run needs 64 GiB"
    )


def test_unknown_memory_refuses_no_run():
    """A worker that could not read its memory (0) is not refused for it: its operator
    names it (gpu:2/80) when it matters."""
    assert Devices(gpus=2).refusal(Needs("gpu", 2, memory_gib=80)) is None
    assert Devices().refusal(Needs("cpu", memory_gib=64)) is None


@pytest.mark.parametrize(
    ("needs", "worker"),
    [
        (Needs(), "a CPU worker"),
        (Needs("cpu", memory_gib=8), "a CPU worker with 8 GiB of memory"),
        (Needs("gpu", 1), "a worker with 1 GPU"),
        (Needs("gpu", 2), "a worker with 2 GPUs"),
        (Needs("gpu", 2, memory_gib=80), "a worker with 2 GPUs with 80 GiB each"),
    ],
)
def test_a_run_says_what_worker_it_waits_for(needs, worker):
    assert needs.worker() == worker


@pytest.mark.parametrize(
    "bad",
    [dict(device="tpu"), dict(device="gpu", devices=0), dict(devices=2), dict(memory_gib=-1)],
)
def test_needs_that_no_worker_could_mean_are_refused(bad):
    with pytest.raises(ValueError):
        Needs(**bad)


def test_needs_round_trip_and_an_empty_record_is_a_cpu():
    needs = Needs("gpu", 2, memory_gib=80)

    assert Needs.from_dict(needs.to_dict()) == needs
    assert Needs.from_dict({}) == Needs.from_dict(None) == Needs("cpu")


DETECTED = Devices(gpus=8, gpu_memory_gib=80, memory_gib=512)


@pytest.mark.parametrize(
    ("spec", "worker"),
    [
        ("cpu", Devices(memory_gib=512)),  # a GPU machine kept for CPU work
        ("cpu/64", Devices(memory_gib=64)),
        ("gpu:2", Devices(gpus=2, gpu_memory_gib=80, memory_gib=512)),
        ("GPU:2/40", Devices(gpus=2, gpu_memory_gib=40, memory_gib=512)),
        ("gpu", Devices(gpus=1, gpu_memory_gib=80, memory_gib=512)),
        (" gpu:4/79.5 ", Devices(gpus=4, gpu_memory_gib=79.5, memory_gib=512)),
    ],
)
def test_an_operator_names_a_workers_devices(spec, worker):
    assert parse_devices(spec, DETECTED) == worker
    assert parse_devices(worker.spec(), DETECTED) == worker


@pytest.mark.parametrize("spec", ["", "gpus:2", "gpu:0", "cpu:2", "gpu:two", "2", "gpu:2/x"])
def test_a_devices_typo_stops_the_worker_rather_than_misroute_runs(spec):
    with pytest.raises(ValueError, match="SLEUTH_WORKER_DEVICES"):
        parse_devices(spec, DETECTED)


def test_the_environment_names_the_devices_without_probing_for_them(monkeypatch):
    def no_probe():
        raise AssertionError("gpu:2/80 names everything: nothing to detect")

    monkeypatch.setattr(devices_module, "detect_devices", no_probe)
    monkeypatch.setenv("SLEUTH_WORKER_DEVICES", "gpu:2/80")
    worker_devices.cache_clear()
    try:
        assert (worker_devices().gpus, worker_devices().gpu_memory_gib) == (2, 80)
    finally:
        worker_devices.cache_clear()


def test_a_cpu_machine_is_detected_as_a_cpu_worker_without_a_probe(monkeypatch):
    monkeypatch.setattr(devices_module, "_nvidia_present", lambda: False)
    monkeypatch.setattr(devices_module.subprocess, "run", None)  # any probe would fail

    detected = devices_module.detect_devices()

    assert detected.gpus == 0 and detected.memory_gib > 0


def test_the_gpu_probe_counts_devices_and_takes_the_smallest_ones_memory(monkeypatch):
    class Probe:
        returncode = 0
        stdout = f"[{80 * 1024**3}, {40 * 1024**3}]\n"

    monkeypatch.setattr(devices_module, "_nvidia_present", lambda: True)
    monkeypatch.setattr(devices_module.subprocess, "run", lambda *a, **k: Probe())

    assert devices_module.detect_devices().spec() == "gpu:2/40"


def test_every_preset_states_its_needs():
    for name, preset in PRESETS.items():
        assert isinstance(preset["needs"], Needs), name
    assert preset_needs("quick-cpu").device == "cpu"
    assert preset_needs("standard-gpu") == Needs("gpu", 1, memory_gib=22)
    with pytest.raises(UnknownPreset):
        preset_needs("no-such-preset")
