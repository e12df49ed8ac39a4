"""Stop and start one service of the test session's stack (devstack.pytest_plugin) in the
middle of a test, on the same port and data folder, as an operator's restart would.

`ServiceFaults(config).stopped("postgres")` is a context manager: the service is down
inside it and up again, answering, when it exits, however the block ended, so the rest of
the session finds the stack healthy. Services given from outside (`DATABASE_URL`…) are
not ours to stop: `ServiceFaults.for_session` skips the test then.

While it is down its port stays ours, so nothing else on the machine takes it meanwhile
(another test session starting then takes a free default port, and this session's
clients would talk to its server; seen here). A plain bind cannot hold it (the old
server's closed connections wait in TIME_WAIT), so a listener holds it and resets every
connection at once, as a server going down does ("the database system is shutting
down", a closed socket). After the start, the service that answers is checked to be this
one (its data folder)."""

import socket
import struct
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from devstack.postgres import EmbeddedPostgres
from devstack.pytest_plugin import _STACK
from devstack.redis import EmbeddedRedis
from devstack.s3 import EmbeddedS3

KINDS = {"postgres": EmbeddedPostgres, "redis": EmbeddedRedis, "s3": EmbeddedS3}


@dataclass
class Outage:
    """One restart's times on the wall clock (as the step journal's): asked to stop (it
    answers no more from then on), stopped, asked to start, answering again."""

    service: str
    stopping_at: float = 0.0
    stopped_at: float = 0.0
    starting_at: float = 0.0
    up_at: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def down_seconds(self) -> float:
        return self.up_at - self.stopping_at


class ServiceFaults:
    def __init__(self, stack):
        self.stack = stack

    @classmethod
    def for_session(cls, config) -> "ServiceFaults":
        entry = config.stash.get(_STACK, None)
        if entry is None:
            pytest.skip("no test stack was started here (SLEUTH_TEST_STACK=0)")
        return cls(entry[0])

    def service(self, name: str):
        for service in self.stack.services:
            if isinstance(service, KINDS[name]):
                return service
        pytest.skip(f"{name} is an external service here: not this test's to restart")

    @contextmanager
    def stopped(self, name: str):
        """`name` is down inside the block; started again (same port, same data) and
        answering after it. Yields the Outage, whose times the block may read."""
        service = self.service(name)
        outage = Outage(name, stopping_at=time.time())
        holder = None
        try:
            service.stop()
            holder = PortHolder.on(service.port, outage)
            outage.stopped_at = time.time()
            yield outage
        finally:
            outage.starting_at = time.time()
            if holder is not None:
                holder.close()
            start_until_answering(name, service)
            outage.up_at = time.time()
            after_restart(name)


class PortHolder:
    """Listens on a stopped service's port and resets every connection at once."""

    def __init__(self, port: int):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.sock.settimeout(0.1)
        self.closed = threading.Event()
        self.thread = threading.Thread(target=self._reset_all, daemon=True)
        self.thread.start()

    @classmethod
    def on(cls, port: int, outage: Outage, timeout: float = 5) -> "PortHolder | None":
        deadline = time.monotonic() + timeout
        while True:
            try:
                return cls(port)
            except OSError:
                if time.monotonic() > deadline:
                    outage.notes.append(f"port {port} could not be held while down")
                    return None
                time.sleep(0.1)

    def _reset_all(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            conn.close()  # a reset: no TIME_WAIT left behind

    def close(self) -> None:
        self.closed.set()
        self.thread.join(timeout=5)
        self.sock.close()


def start_until_answering(name: str, service, timeout: float = 120) -> None:
    """Start the service, then wait for a real answer from it (a loaded box may be slow)."""
    for attempt in range(3):
        try:
            service.start()
            break
        except Exception:
            if attempt == 2:
                raise
            service.stop()  # whatever half-started
            time.sleep(2)
    deadline = time.monotonic() + timeout
    while True:
        try:
            answers(name, service)
            return
        except AssertionError:
            raise  # another server took the port: nothing to wait for
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def answers(name: str, service) -> None:
    """One real request to the service from this process, which must reach this session's
    server (its data folder); raises otherwise."""
    from django.conf import settings

    if name == "postgres":
        from django.db import connection

        connection.close()  # ours died with the server
        with connection.cursor() as cursor:
            cursor.execute("SHOW data_directory")
            (data,) = cursor.fetchone()
        assert Path(data).resolve() == service.data.resolve(), f"another Postgres: {data}"
    elif name == "redis":
        import redis

        client = redis.Redis.from_url(settings.CELERY_BROKER_URL, socket_timeout=5)
        folder = client.config_get("dir")["dir"]
        assert Path(folder).resolve() == service.dir.resolve(), f"another Redis: {folder}"
    else:
        from core.s3 import buckets, s3_client

        assert service.process is not None and service.process.poll() is None
        for bucket in buckets():
            s3_client().head_bucket(Bucket=bucket)


def after_restart(name: str) -> None:
    """What this process holds on to across a restart: Django's connections and cache."""
    from django.db import connections

    if name == "postgres":
        connections.close_all()
    if name == "redis":
        from django.core.cache import cache

        cache.close()
