"""Environment defaults a worker process sets before torch loads (the `sleuth` CLI and the
Celery worker both call `apply_defaults` first). An operator's own value always wins."""

import os
from collections.abc import MutableMapping

DEFAULTS = {
    # OpenMP threads that spin while waiting for work make every forward pass several times
    # slower when anything else uses the cores (a worker's neighbours, a second run);
    # passive waiting costs nothing when the machine is idle.
    "OMP_WAIT_POLICY": "PASSIVE",
    # On a GPU image that also holds JAX, whatever first starts JAX's backend (a library
    # probing what is installed is enough) takes 75 % of the GPU's memory for JAX's pool:
    # two runs on one H200 worker then failed with CUDA out of memory at their first
    # allocation. JAX allocates as it needs instead; torch never notices.
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
}


def apply_defaults(environ: MutableMapping[str, str] = os.environ) -> None:
    """Set each of DEFAULTS that `environ` does not set already."""
    for name, value in DEFAULTS.items():
        environ.setdefault(name, value)
