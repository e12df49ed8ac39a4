"""Parsing untrusted files under limits: a child process with a memory cap parses them
one by one, and a document that takes longer than the time limit gets the child killed
(and a fresh one started for the rest). A hostile or broken file can fail, but cannot
hang or exhaust the worker that asked.

The child is a plain `python -m engine.documents.sandbox` process (a document's name and
bytes in, a parsed document out as a JSON line), so it inherits no threads, locks or state
from the caller (a Celery worker, a web process, a test runner). Nor its secrets: the
child's environment holds only PATH, HOME, the locale and the Python path (no S3 keys,
database URL, SECRET_KEY or judge key), and it has no network where the OS lets us take it
away (`unshare --net`, or `unshare -rn` without root). Nor its files: before it reads a
document, the child confines itself with Landlock (`documents.confine`) to reading its own
Python, libraries and the engine's source, so a parser exploited by a crafted file cannot
read the worker's environment through /proc, another tenant's cached index or anything else
of the worker's user, nor write anywhere; it is sent each document's bytes, never a path.
One log line says which protections this machine gives (`confinement_report` checks them).
Its answer is capped: the child sends an error instead of a parse larger than
`max_output_bytes`, and the parent stops reading (and kills the child) past that, so nothing
is buffered unbounded.
"""

from __future__ import annotations

import json
import logging
import os
import resource
import selectors
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from engine.documents.chunking import Section
from engine.documents.confine import confine_to
from engine.documents.parsing import ParsedDocument, ParseLimits, parse_bytes

logger = logging.getLogger(__name__)

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_STARTUP_TIMEOUT_S = 60.0
# The largest parse (as the JSON line the child sends) the parent accepts.
MAX_OUTPUT_BYTES = 128 * 1024 * 1024
# The only variables the child inherits: none of them holds a secret.
_CHILD_ENV = (
    "PATH", "HOME", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "LD_LIBRARY_PATH",
)  # fmt: skip


def parse_files(
    paths: Iterable[str | Path],
    limits: ParseLimits | None = None,
    progress: bool = False,
    max_output_bytes: int = MAX_OUTPUT_BYTES,
) -> Iterator[ParsedDocument]:
    """Parse each file under `limits`, yielding one ParsedDocument (maybe an error) each."""
    limits = limits or ParseLimits()
    paths = [Path(p) for p in paths]
    child: _Child | None = None
    try:
        for path in tqdm(paths, desc="parsing", unit="doc", disable=not progress, file=sys.stderr):
            try:
                size = path.stat().st_size
            except OSError as exc:
                yield ParsedDocument(doc=path.name, error=f"cannot read the file: {exc.strerror}")
                continue
            if size > limits.max_bytes:
                yield ParsedDocument(
                    doc=path.name,
                    error=f"too large ({size / 1e6:.0f} MB; limit {limits.max_bytes / 1e6:.0f} MB)",
                )
                continue
            child = child or _Child(limits, max_output_bytes)
            result = child.parse(path)
            if result is None:  # the child was killed or died: the next file gets a new one
                reason = child.last_error
                child.close()
                child = None
                result = ParsedDocument(
                    doc=path.name, error=_failure_message(reason, limits, max_output_bytes)
                )
            yield result
    finally:
        if child is not None:
            child.close()


def _failure_message(reason: str, limits: ParseLimits, max_output_bytes: int) -> str:
    if reason == "timeout":
        return f"parsing took longer than {limits.timeout_s:g}s and was stopped"
    if reason == "output":
        return _too_much_text(max_output_bytes)
    return (
        "the parser crashed on this file: it may be damaged, or need more than "
        f"{limits.memory_mb} MB of memory"
    )


def _too_much_text(max_output_bytes: int) -> str:
    return (
        f"the text read from this file is over {max_output_bytes / 1e6:g} MB; "
        "split it into smaller documents"
    )


def child_environment() -> dict[str, str]:
    """The child's whole environment: the locale, PATH and HOME, and the Python path."""
    env = {key: os.environ[key] for key in _CHILD_ENV if key in os.environ}
    env["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(_PROJECT_ROOT), os.environ.get("PYTHONPATH")])
    )
    return env


_no_network: list[str] | None = None


def no_network_prefix() -> list[str]:
    """The command that starts the child without network: `unshare --net` (root) or
    `unshare -rn` (a user namespace), whichever works here; [] where neither does (a
    container without the capability), said once in the log."""
    global _no_network
    if _no_network is not None:
        return _no_network
    unshare, true = shutil.which("unshare"), shutil.which("true")
    tries = [["--net"], ["-rn"]] if os.geteuid() == 0 else [["-rn"], ["--net"]]
    _no_network = []
    for flags in tries if unshare and true else []:
        try:
            done = subprocess.run(
                [unshare, *flags, true],
                env=child_environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=10,
            )
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            _no_network = [unshare, *flags]
            break
    if _no_network:
        logger.info("parser sandbox: children run without network (%s)", " ".join(_no_network))
    else:
        logger.info("parser sandbox: no network namespace here; children keep the network")
    return _no_network


class _Child:
    def __init__(self, limits: ParseLimits, max_output_bytes: int = MAX_OUTPUT_BYTES):
        self.limits = limits
        self.max_output_bytes = max_output_bytes
        settings = json.dumps(asdict(limits))
        self.process = subprocess.Popen(
            no_network_prefix()
            + [sys.executable, "-m", "engine.documents.sandbox", settings, str(max_output_bytes)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=child_environment(),
            cwd=_PROJECT_ROOT,
        )
        self.buffer = bytearray()
        self.last_error = ""
        # The time limit is for parsing, not for starting Python: wait for "ready" first.
        started = self._read_line(time.monotonic() + _STARTUP_TIMEOUT_S) or b""
        self.ready = started.startswith(b"ready")
        if self.ready:
            _say_confinement(started.removeprefix(b"ready").strip().decode())

    def parse(self, path: Path) -> ParsedDocument | None:
        """The parsed document, or None (with last_error set) if the child had to go."""
        if not self.ready:
            self.last_error = "crashed"
            return None
        data = path.read_bytes()  # the child reads no path: it may read no file of ours
        try:
            header = json.dumps({"name": path.name, "size": len(data)}).encode()
            self.process.stdin.write(header + b"\n" + data)
            self.process.stdin.flush()
        except BrokenPipeError:
            self.last_error = "crashed"
            return None
        line = self._read_line(time.monotonic() + self.limits.timeout_s)
        if line is None:
            return None
        record = json.loads(line)
        record["sections"] = [Section(**s) for s in record["sections"]]
        return ParsedDocument(**record)

    def _read_line(self, deadline: float) -> bytes | None:
        fd = self.process.stdout.fileno()
        searched = 0
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (end := self.buffer.find(b"\n", searched)) < 0:
                searched = len(self.buffer)
                if searched > self.max_output_bytes:
                    self.last_error = "output"  # the child is killed; nothing more is read
                    return None
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self.last_error = "timeout"
                    return None
                data = os.read(fd, 1 << 20)
                if not data:
                    self.last_error = "crashed"
                    return None
                self.buffer += data
        line = bytes(self.buffer[:end])
        del self.buffer[: end + 1]
        return line

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass


_said: set[str] = set()


def _say_confinement(how: str) -> None:
    if how not in _said:
        _said.add(how)
        if how.startswith("landlock"):
            logger.info("parser sandbox: children read only their own code (%s)", how)
        else:
            logger.warning(
                "parser sandbox: no Landlock on this kernel; a child can read what the "
                "worker's user can (run workers on Linux 5.13 or later)"
            )


def readable_by_child() -> list[Path]:
    """What a confined child may read: its Python and libraries, the system's shared
    libraries and data, and the engine's source; not the project's other folders (`var/`
    holds cached indexes in development), /proc, /etc, /tmp or any home."""
    import site
    import sysconfig

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *site.getsitepackages()}
    paths |= {p for p in sysconfig.get_paths().values() if p}
    paths |= {"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/share"}
    return sorted({Path(p) for p in paths} | {_PROJECT_ROOT / "engine"})


def _warm_up() -> None:
    """Import the parsers' libraries before the child confines itself: loading them later
    is allowed, but costs each document the time."""
    import bs4  # noqa: F401
    import charset_normalizer  # noqa: F401
    import docx  # noqa: F401
    import pypdfium2  # noqa: F401


def _confine() -> str:
    abi = confine_to(readable_by_child())
    return f"landlock {abi}" if abi else "none"


def _child_main(limits: ParseLimits, max_output_bytes: int = MAX_OUTPUT_BYTES) -> None:
    cap = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    _warm_up()
    how = _confine()
    stdin, out = sys.stdin.buffer, sys.stdout.buffer
    out.write(f"ready {how}\n".encode())
    out.flush()
    while line := stdin.readline():
        header = json.loads(line)
        name, data = header["name"], stdin.read(header["size"])
        try:
            result = parse_bytes(data, name, limits)
        except MemoryError:
            result = ParsedDocument(doc=name, error="needs more memory than allowed")
        except Exception as exc:  # a parser library bug must still come back as an error
            result = ParsedDocument(
                doc=name, error=f"cannot be parsed ({type(exc).__name__}: {exc})"
            )
        data = json.dumps(asdict(result)).encode()
        if len(data) > max_output_bytes:
            error = ParsedDocument(doc=name, error=_too_much_text(max_output_bytes))
            data = json.dumps(asdict(error)).encode()
        out.write(data + b"\n")
        out.flush()


# -- checking the confinement on this machine ----------------------------------------------


def confinement_report(paths: Iterable[str | Path] = ()) -> dict:
    """Start a child confined as a parser child is (same environment, namespaces and
    Landlock rules) and have it try what an exploited parser would: read the worker's
    environment through /proc, read each of `paths` (another tenant's files), open a TCP
    connection. {"confinement": "landlock N" | "none", "read": {what: bool}, "tcp": bool}."""
    command = no_network_prefix() + [sys.executable, "-m", "engine.documents.sandbox", "--check"]
    done = subprocess.run(
        [*command, *(str(p) for p in paths)],
        capture_output=True,
        env=child_environment(),
        cwd=_PROJECT_ROOT,
        timeout=_STARTUP_TIMEOUT_S,
    )
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def _check_main(paths: list[str]) -> None:
    import socket

    _warm_up()
    how = _confine()

    def readable(path: str) -> bool:
        try:
            with open(path, "rb") as file:
                file.read(1)
            return True
        except OSError:
            return False

    read = {"parent environment": readable(f"/proc/{os.getppid()}/environ")}
    read |= {path: readable(path) for path in paths}
    try:
        socket.create_connection(("127.0.0.1", 9), timeout=1).close()
        tcp = True
    except ConnectionRefusedError:
        tcp = True  # the connection was tried: a port that listens would have answered
    except OSError:
        tcp = False
    print(json.dumps({"confinement": how, "read": read, "tcp": tcp}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--check"]:
        _check_main(sys.argv[2:])
    else:
        _child_main(
            ParseLimits(**json.loads(sys.argv[1])),
            int(sys.argv[2]) if len(sys.argv) > 2 else MAX_OUTPUT_BYTES,
        )
