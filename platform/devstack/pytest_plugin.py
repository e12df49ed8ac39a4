"""Pytest plugin: one real Postgres, Redis and S3 for the whole test session, torn down after.

Loaded with `-p devstack.pytest_plugin` (see pyproject.toml). It runs before pytest-django
reads the settings, so `DATABASE_URL` and friends point at the servers started here.
External services set in the environment are used as they are. `SLEUTH_TEST_STACK=0`
starts nothing (for engine-only test runs, which need no services).

With pytest-xdist (`-n N`) every worker is a session of its own and starts its own stack, on
ports the kernel gives it; the controller, which runs no test, starts none. External services
would be shared by the workers (their queues too): use them with one process (TEST_WORKERS=0).
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from .stack import Stack

_PLACEHOLDERS = {
    # Lets settings import when no services were started; a test that touches them fails.
    "DATABASE_URL": "postgres://postgres@127.0.0.1:1/unstarted",
    "REDIS_URL": "redis://127.0.0.1:1/0",
    "S3_ENDPOINT_URL": "http://127.0.0.1:1",
    "S3_ACCESS_KEY_ID": "unstarted",
    "S3_SECRET_ACCESS_KEY": "unstarted",
}


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config, parser, args):
    if os.environ.get("SLEUTH_TEST_STACK", "1") == "0" or _xdist_controller(early_config):
        for key, value in _PLACEHOLDERS.items():
            os.environ.setdefault(key, value)
        return
    for key, value in _PLACEHOLDERS.items():  # an xdist worker inherits its controller's
        if os.environ.get(key) == value:
            del os.environ[key]
    var_dir = Path(tempfile.mkdtemp(prefix="sleuth-test-"))
    # As root Postgres runs as `nobody`: an open folder keeps its data here, not in /var/tmp.
    var_dir.chmod(0o755)
    stack = Stack(var_dir, log=lambda message: None, default_ports=False)
    try:
        os.environ.update(stack.start())
        # Workers' local copies (indexes, published agents) keyed by S3 prefix: another
        # session's stack has the same prefixes for other objects, so each session keeps its own.
        os.environ["SLEUTH_WORK_DIR"] = str(var_dir / "work")
    except BaseException:
        shutil.rmtree(var_dir, ignore_errors=True)
        raise
    early_config.stash[_STACK] = (stack, var_dir)


_STACK = pytest.StashKey[tuple]()


_CONTROLLER = "SLEUTH_TEST_CONTROLLER_PID"


def _xdist_controller(early_config) -> bool:
    """Whether this process hands the tests to xdist workers (and so needs no services).
    Its workers are its children, started with its invocation's arguments (`-n` too), and find
    its pid in the environment; a pytest -n that a test starts is a controller of its own."""
    workers = getattr(early_config.known_args_namespace, "numprocesses", None)
    if not workers or os.environ.get(_CONTROLLER) == str(os.getppid()):
        return False
    os.environ[_CONTROLLER] = str(os.getpid())
    return True


def pytest_unconfigure(config):
    entry = config.stash.get(_STACK, None)
    if entry is None:
        return
    stack, var_dir = entry
    removable = [service for service in stack.services if hasattr(service, "remove")]
    stack.stop()
    for service in removable:  # also what a private TMPDIR made it keep elsewhere
        service.remove()
    shutil.rmtree(var_dir, ignore_errors=True)
