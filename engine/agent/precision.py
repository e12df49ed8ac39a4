"""The number format rollouts and the trainer's matmuls run in.

"float32" is exact and everywhere fast enough on a GPU. "bfloat16" halves the bytes every
forward pass reads and, on CPUs with AVX512-BF16 or AMX (this project's machines) and on
GPUs, runs matmuls several times faster: measured here, a 512x576x1536 matmul went from 200
to 880 GFLOP/s. Rollouts then sample from a bfloat16 copy of the trainer's weights, and the
trainer's forward and backward run under bfloat16 autocast while its master weights and
optimizer stay in float32; π and μ then differ by rounding, which the trainer's mismatch
metrics report and DPPO's trust region is built for. "auto" picks bfloat16 where it is
fast and float32 elsewhere (on a CPU without BF16 instructions it would be emulated, and
slower).
"""

from __future__ import annotations

from contextlib import nullcontext
from functools import cache
from pathlib import Path

# torch is imported inside the functions: run settings (the web process) read PRECISIONS.
PRECISIONS = ("auto", "float32", "bfloat16")
_CPU_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


@cache
def cpu_has_fast_bf16() -> bool:
    """Whether this CPU has bfloat16 matmul instructions (Linux: /proc/cpuinfo flags)."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    flags = next((line for line in info.splitlines() if line.startswith("flags")), "")
    return any(flag in flags.split() for flag in _CPU_BF16_FLAGS)


def resolve_precision(precision: str, device="cpu") -> str:
    """ "float32" or "bfloat16" for `precision` on `device` ("auto" decides by the hardware)."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    if precision != "auto":
        return precision
    if torch.device(device).type == "cuda":
        return "bfloat16" if torch.cuda.is_bf16_supported() else "float32"
    return "bfloat16" if cpu_has_fast_bf16() else "float32"


def torch_dtype(precision: str):
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16}[precision]


def autocast(precision: str, device="cpu"):
    """The context the trainer's forward and backward run in: bfloat16 autocast (weights
    kept in float32), or nothing for float32."""
    import torch

    if precision == "bfloat16":
        return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)
    return nullcontext()
