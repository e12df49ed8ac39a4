"""Parsing untrusted files under limits: a child process with a memory cap parses them
one by one, and a document that takes longer than the time limit gets the child killed
(and a fresh one started for the rest). A hostile or broken file can fail, but cannot
hang or exhaust the worker that asked.

The child is a plain `python -m workers.documents.sandbox` process speaking JSON lines
(a path in, a parsed document out), so it inherits no threads, locks or state from the
caller (a Celery worker, a web process, a test runner).
"""

from __future__ import annotations

import json
import os
import resource
import selectors
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from workers.documents.chunking import Section
from workers.documents.parsing import ParsedDocument, ParseLimits, parse_bytes

_PROJECT_ROOT = Path(__file__).resolve().parents[2]
_STARTUP_TIMEOUT_S = 60.0


def parse_files(
    paths: Iterable[str | Path], limits: ParseLimits | None = None, progress: bool = False
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
            child = child or _Child(limits)
            result = child.parse(path)
            if result is None:  # the child was killed or died: the next file gets a new one
                reason = child.last_error
                child.close()
                child = None
                result = ParsedDocument(doc=path.name, error=_failure_message(reason, limits))
            yield result
    finally:
        if child is not None:
            child.close()


def _failure_message(reason: str, limits: ParseLimits) -> str:
    if reason == "timeout":
        return f"parsing took longer than {limits.timeout_s:g}s and was stopped"
    return (
        "the parser crashed on this file: it may be damaged, or need more than "
        f"{limits.memory_mb} MB of memory"
    )


class _Child:
    def __init__(self, limits: ParseLimits):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(_PROJECT_ROOT), env.get("PYTHONPATH")])
        )
        self.limits = limits
        self.process = subprocess.Popen(
            [sys.executable, "-m", "workers.documents.sandbox", json.dumps(asdict(limits))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self.buffer = b""
        self.last_error = ""
        # The time limit is for parsing, not for starting Python: wait for "ready" first.
        self.ready = self._read_line(time.monotonic() + _STARTUP_TIMEOUT_S) == b"ready"

    def parse(self, path: Path) -> ParsedDocument | None:
        """The parsed document, or None (with last_error set) if the child had to go."""
        if not self.ready:
            self.last_error = "crashed"
            return None
        try:
            self.process.stdin.write(json.dumps(str(path.resolve())).encode() + b"\n")
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
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while b"\n" not in self.buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    self.last_error = "timeout"
                    return None
                data = os.read(fd, 1 << 20)
                if not data:
                    self.last_error = "crashed"
                    return None
                self.buffer += data
        line, _, self.buffer = self.buffer.partition(b"\n")
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


def _child_main(limits: ParseLimits) -> None:
    cap = limits.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    out = sys.stdout.buffer
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin:
        path = Path(json.loads(line))
        try:
            result = parse_bytes(path.read_bytes(), path.name, limits)
        except MemoryError:
            result = ParsedDocument(doc=path.name, error="needs more memory than allowed")
        except Exception as exc:  # a parser library bug must still come back as an error
            result = ParsedDocument(
                doc=path.name, error=f"cannot be parsed ({type(exc).__name__}: {exc})"
            )
        out.write(json.dumps(asdict(result)).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    _child_main(ParseLimits(**json.loads(sys.argv[1])))
