"""`python -m devstack run`: the whole platform on embedded services (what `make run` does).

Starts Postgres, Redis and S3 (unless the environment points at external ones),
prepares them (migrations, buckets, an admin account), then runs gunicorn, a Celery
worker and an inference worker (it keeps published agents loaded for /v1) until Ctrl-C,
which stops every process it started.

`python -m devstack services` starts only the services and prints their variables.
"""

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from .ports import is_free
from .stack import Stack

REPO_ROOT = Path(__file__).resolve().parents[2]


WORKER_NICENESS = int(os.environ.get("WORKER_NICENESS", "10"))


def _lower_priority() -> None:
    os.nice(WORKER_NICENESS)


def _stop_process(process: subprocess.Popen, name: str, timeout: float = 20) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"{name} did not stop within {timeout:.0f}s; killing it", flush=True)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _wait_for_signal(processes: dict[str, subprocess.Popen]) -> int:
    """Sleep until Ctrl-C/SIGTERM (exit 0) or until a child dies on its own (exit 1)."""
    stopping = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, frame: stopping.append(signum))
    while not stopping:
        for name, process in processes.items():
            if process.poll() is not None:
                print(f"{name} exited with code {process.returncode}; stopping", flush=True)
                return 1
        time.sleep(0.3)
    return 0


def run(args: argparse.Namespace) -> int:
    port = int(os.environ.get("PORT", "8000"))
    host = os.environ.get("HOST", "127.0.0.1")
    if not is_free(port):
        print(
            f"Port {port} is already in use. Stop what holds it or choose another: "
            f"PORT=8001 make run",
            file=sys.stderr,
        )
        return 2

    stack = Stack(Path(args.var_dir))
    processes: dict[str, subprocess.Popen] = {}
    try:
        env = {**os.environ, **stack.start(), "PYTHONUNBUFFERED": "1"}
        # Source roots, so apps added after the editable install are importable too.
        env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)])
        env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
        subprocess.run(
            [sys.executable, str(REPO_ROOT / "manage.py"), "bootstrap"], env=env, check=True
        )
        # Own sessions: Ctrl-C reaches only us, and we stop the children in order.
        processes["web"] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "config.wsgi:application",
                "--bind",
                f"{host}:{port}",
                "--workers",
                os.environ.get("WEB_CONCURRENCY", "2"),
                # Threads, so that a long request (a 20 MB upload streaming to S3) holds one
                # thread, not a whole worker: the polls of every open page go on meanwhile.
                "--worker-class",
                "gthread",
                "--threads",
                os.environ.get("WEB_THREADS", "4"),
                # Longer than the pages' 2 s poll: a browser's kept connection is not closed
                # by the server just as the next poll is sent on it.
                "--keep-alive",
                "10",
                "--timeout",
                "120",
                "--access-logfile",
                "-",
            ],
            # Few malloc arenas: each thread would otherwise keep its own, and the memory
            # of one large upload it handled, for good.
            env={**env, "MALLOC_ARENA_MAX": env.get("MALLOC_ARENA_MAX", "2")},
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        processes["worker"] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                "ingest,train",
                "--concurrency",
                os.environ.get("WORKER_CONCURRENCY", "2"),
                "-n",
                "worker@%h",
                "-l",
                "INFO",
            ],
            env=env,
            cwd=REPO_ROOT,
            start_new_session=True,
            # On one box the trainer would take every core from the web server: its steps
            # are long and throughput-bound, a page request is short and waited on. At a
            # lower priority it still gets every core the web server leaves idle.
            preexec_fn=_lower_priority,
        )
        # Published agents answer /v1 from here: threads share one cache of loaded agents.
        processes["inference"] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "config",
                "worker",
                "-Q",
                env.get("SLEUTH_INFERENCE_QUEUE", "inference"),
                "--pool",
                "threads",
                "--concurrency",
                os.environ.get("INFERENCE_CONCURRENCY", "2"),
                "-n",
                "inference@%h",
                "-l",
                "INFO",
            ],
            env=env,
            cwd=REPO_ROOT,
            start_new_session=True,
        )
        print(
            f"\nSleuth is running at http://{host}:{port}/  (admin: /admin/, health: "
            "/healthz, each service: /healthz/details from this machine)"
            "\nPress Ctrl-C to stop.\n",
            flush=True,
        )
        return _wait_for_signal(processes)
    except subprocess.CalledProcessError as error:
        print(f"set-up failed: {error}", file=sys.stderr)
        return 1
    finally:
        print("stopping…", flush=True)
        for name, process in reversed(processes.items()):
            _stop_process(process, name)
        stack.stop()
        print("stopped.", flush=True)


def services(args: argparse.Namespace) -> int:
    stack = Stack(Path(args.var_dir))
    try:
        for key, value in stack.start().items():
            print(f"export {key}='{value}'", flush=True)
        print("# services running; Ctrl-C stops them", flush=True)
        return _wait_for_signal({})
    finally:
        stack.stop()


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devstack",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--var-dir",
        default=os.environ.get("SLEUTH_VAR_DIR", REPO_ROOT / "var"),
        help="where the embedded services keep their data (default: var/)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("run", help="services + web + worker until Ctrl-C").set_defaults(func=run)
    commands.add_parser("services", help="only the services").set_defaults(func=services)
    args = parser.parse_args()
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
