"""The environment defaults a worker process sets before torch loads."""

import os
import subprocess
import sys

from engine.process_env import DEFAULTS, apply_defaults


def test_defaults_fill_only_what_the_operator_left_unset():
    environ = {"OMP_WAIT_POLICY": "ACTIVE"}
    apply_defaults(environ)
    assert environ["OMP_WAIT_POLICY"] == "ACTIVE"
    assert environ["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert set(environ) == set(DEFAULTS)


def test_the_cli_sets_them_when_it_loads():
    environ = {k: v for k, v in os.environ.items() if k not in DEFAULTS}
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, engine.cli; "
            "print(os.environ['OMP_WAIT_POLICY'], os.environ['XLA_PYTHON_CLIENT_PREALLOCATE'])",
        ],
        env=environ,
        capture_output=True,
        text=True,
        check=True,
    )
    assert shown.stdout.split() == ["PASSIVE", "false"]
