"""What a run needs from a worker, and what a worker holds (issue 69: routing by worker kind).

A preset states its run's `Needs` (a CPU, or N GPUs, and the memory each must have); a worker
knows its `Devices`, detected at start or named by its operator (SLEUTH_WORKER_DEVICES, also
how tests start stand-in workers). The platform routes a run to a queue its needs name and a
worker consumes only the queues its devices can hold (runs.routing); `Devices.refusal` is the
one test of "can this worker hold that run", used by both the routing and the worker's own
check when it claims a run.

No Django here: the engine's CLI can ask the same question (`python -m engine.devices`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

logger = logging.getLogger(__name__)

DEVICE_KINDS = ("cpu", "gpu")
GIB = 1024**3


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


@dataclass(frozen=True)
class Needs:
    """What one run needs from the worker that trains and evaluates it: a CPU (`device`
    "cpu", `devices` 1) or `devices` GPUs on one machine, and `memory_gib` of memory: each
    GPU's own for a GPU run, the machine's for a CPU run (0: no minimum)."""

    device: str = "cpu"
    devices: int = 1
    memory_gib: float = 0

    def __post_init__(self) -> None:
        if self.device not in DEVICE_KINDS:
            raise ValueError(f"device must be one of {DEVICE_KINDS}, not {self.device!r}")
        if self.devices < 1 or (self.device == "cpu" and self.devices != 1):
            raise ValueError("a CPU run needs 1 device; a GPU run 1 or more")
        if self.memory_gib < 0:
            raise ValueError("memory_gib must be 0 or more")

    @classmethod
    def from_dict(cls, data: dict | None) -> Needs:
        """From `to_dict()`'s form; empty (a run recorded before needs existed): a CPU."""
        data = data or {}
        return cls(
            device=str(data.get("device", "cpu")),
            devices=int(data.get("devices", 1)),
            memory_gib=float(data.get("memory_gib", 0)),
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def ranks(self) -> int:
        """The training processes a run with these needs starts (training.distributed): one
        a GPU; one on a CPU, whose cores its threads share."""
        return self.devices if self.device == "gpu" else 1

    def describe(self) -> str:
        """ "a CPU", "2 GPUs", "1 GPU with 24 GiB", "a CPU with 8 GiB of memory"."""
        if self.device == "cpu":
            memory = f" with {self.memory_gib:g} GiB of memory" if self.memory_gib else ""
            return f"a CPU{memory}"
        memory = ""
        if self.memory_gib:
            memory = f" with {self.memory_gib:g} GiB" + (" each" if self.devices > 1 else "")
        return _count(self.devices, "GPU", "GPUs") + memory

    def worker(self) -> str:
        """The worker the run waits for: "a CPU worker", "a worker with 2 GPUs"."""
        if self.device == "cpu":
            return "a CPU worker" + (
                f" with {self.memory_gib:g} GiB of memory" if self.memory_gib else ""
            )
        return f"a worker with {self.describe()}"


@dataclass(frozen=True)
class Devices:
    """What one worker holds: `gpus` GPUs (0: a CPU worker), the smallest one's memory, and
    the machine's memory, in GiB (0: unknown, which no minimum refuses)."""

    gpus: int = 0
    gpu_memory_gib: float = 0
    memory_gib: float = 0

    def refusal(self, needs: Needs) -> str | None:
        """Why this worker cannot hold a run that needs `needs`, or None when it can. A GPU
        worker holds a run that needs fewer GPUs than it has (the rest stay idle); whether it
        takes CPU runs at all is the operator's choice (runs.routing), not a matter of
        hardware."""
        if needs.device == "gpu":
            if self.gpus < needs.devices:
                return f"it has {self.describe()}; the run needs {needs.describe()}"
            if self.gpu_memory_gib and self.gpu_memory_gib < needs.memory_gib:
                return (
                    f"its GPUs have {self.gpu_memory_gib:g} GiB each; the run needs "
                    f"{needs.memory_gib:g} GiB each"
                )
            return None
        if self.memory_gib and self.memory_gib < needs.memory_gib:
            return (
                f"it has {self.memory_gib:g} GiB of memory; the run needs {needs.memory_gib:g} GiB"
            )
        return None

    def describe(self) -> str:
        """ "no GPU", "2 GPUs of 80 GiB" (a worker's side of a refusal)."""
        if not self.gpus:
            return "no GPU"
        memory = f" of {self.gpu_memory_gib:g} GiB" if self.gpu_memory_gib else ""
        return _count(self.gpus, "GPU", "GPUs") + memory

    def spec(self) -> str:
        """This worker in SLEUTH_WORKER_DEVICES's form (`parse_devices` reads it back)."""
        if not self.gpus:
            return "cpu" + (f"/{self.memory_gib:g}" if self.memory_gib else "")
        return f"gpu:{self.gpus}" + (f"/{self.gpu_memory_gib:g}" if self.gpu_memory_gib else "")


# "cpu", "cpu/64" (64 GiB of memory), "gpu:2", "gpu:2/80" (two GPUs of 80 GiB each).
_SPEC = re.compile(r"^\s*(cpu|gpu)(?::(\d+))?(?:/(\d+(?:\.\d+)?))?\s*$", re.IGNORECASE)


def parse_devices(spec: str, detected: Devices | None = None) -> Devices:
    """An operator's SLEUTH_WORKER_DEVICES: "cpu" or "gpu:N", each optionally with "/GiB"
    (a GPU's memory for "gpu", the machine's for "cpu"). What the spec leaves out comes from
    `detected`: "gpu:1" on an 8-GPU machine keeps the GPUs' detected memory. ValueError for
    anything else, so a typo stops the worker rather than mis-route runs."""
    match = _SPEC.match(spec or "")
    if not match:
        raise ValueError(
            f"SLEUTH_WORKER_DEVICES={spec!r}: write cpu, cpu/GIB, gpu:N or gpu:N/GIB "
            "(e.g. gpu:2/80 for two GPUs of 80 GiB)"
        )
    kind, count, memory = match.group(1).lower(), match.group(2), match.group(3)
    detected = detected or Devices()
    if kind == "cpu":
        if count is not None:
            raise ValueError(f"SLEUTH_WORKER_DEVICES={spec!r}: a CPU worker has no device count")
        return Devices(memory_gib=float(memory) if memory else detected.memory_gib)
    gpus = int(count) if count is not None else 1
    if gpus < 1:
        raise ValueError(f"SLEUTH_WORKER_DEVICES={spec!r}: gpu:0 is written cpu")
    return Devices(
        gpus=gpus,
        gpu_memory_gib=float(memory) if memory else detected.gpu_memory_gib,
        memory_gib=detected.memory_gib,
    )


def host_memory_gib() -> float:
    """The machine's memory, or the container's limit when that is lower (cgroup v2 or v1)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        total = 0
    for limit_file in (
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ):
        try:
            text = Path(limit_file).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and (not total or int(text) < total):
            total = int(text)
    return round(total / GIB, 1)


# Counted in a child process: CUDA initialised in a prefork worker's parent breaks every
# forked child's CUDA ("Cannot re-initialize CUDA in forked subprocess"). The child sees
# CUDA_VISIBLE_DEVICES as the worker would.
_GPU_PROBE = (
    "import json, torch\n"
    "n = torch.cuda.device_count() if torch.cuda.is_available() else 0\n"
    "print(json.dumps([torch.cuda.get_device_properties(i).total_memory for i in range(n)]))\n"
)


def _nvidia_present() -> bool:
    """Whether an NVIDIA driver is visible at all (no child process on a CPU machine)."""
    return Path("/proc/driver/nvidia").exists() or Path("/dev/nvidia0").exists()


def detect_devices() -> Devices:
    """This machine's GPUs (as torch sees them) and memory. A probe that fails counts no
    GPU, with a warning: a worker that would take GPU runs it cannot run is worse than one
    that takes none until its operator says (SLEUTH_WORKER_DEVICES)."""
    memory = host_memory_gib()
    if not _nvidia_present():
        return Devices(memory_gib=memory)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", _GPU_PROBE], capture_output=True, text=True, timeout=120
        )
        totals = json.loads(probe.stdout.strip().splitlines()[-1]) if probe.returncode == 0 else []
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        totals, probe = [], None
    if not totals:
        if probe is None or probe.returncode != 0:
            logger.warning("could not count this machine's GPUs; taking it for a CPU worker")
        return Devices(memory_gib=memory)
    return Devices(gpus=len(totals), gpu_memory_gib=round(min(totals) / GIB, 1), memory_gib=memory)


@lru_cache(maxsize=1)
def worker_devices() -> Devices:
    """This worker's devices: SLEUTH_WORKER_DEVICES when set (what the operator gives the
    worker, or a stand-in worker in tests), else detected; once per process (a prefork
    worker's children inherit its parent's answer)."""
    spec = os.environ.get("SLEUTH_WORKER_DEVICES", "").strip()
    if spec:
        # Only what the spec leaves out is detected: "gpu:2/80" starts no probe.
        needs_probe = spec.lower().startswith("gpu") and "/" not in spec
        detected = detect_devices() if needs_probe else Devices(memory_gib=host_memory_gib())
        return parse_devices(spec, detected)
    return detect_devices()


if __name__ == "__main__":
    devices = worker_devices()
    print(f"{devices.spec()}  ({devices.describe()}, {devices.memory_gib:g} GiB of memory)")
