"""Dependency checks behind /healthz/details. Each returns (ok, detail) and never raises.

A detail says how a dependency answered and how fast, never what it is (no versions, host
or bucket names) and never why it failed (exception text can hold hosts, ports and keys):
a failure is "unreachable", with the exception logged for the operator. The report is
cached per process for HEALTH_CACHE_SECONDS, so polling it cannot load the dependencies.
"""

import logging
import threading
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

logger = logging.getLogger(__name__)

CheckResult = tuple[bool, str]
UNREACHABLE = "unreachable"


def _timed(name: str, check: Callable[[], str]) -> CheckResult:
    started = time.monotonic()
    try:
        detail = check()
    except Exception:  # a health check reports failures, it does not raise them
        logger.warning("health check %s failed", name, exc_info=True)
        return False, UNREACHABLE
    return True, f"{detail} ({(time.monotonic() - started) * 1000:.0f} ms)"


def check_postgres() -> CheckResult:
    def query() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return "ok"

    return _timed("postgres", query)


def check_redis() -> CheckResult:
    import redis

    def ping() -> str:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2
        )
        try:
            client.ping()
            return "ok"
        finally:
            client.close()

    return _timed("redis", ping)


def check_s3() -> CheckResult:
    from .s3 import buckets, s3_client

    def head() -> str:
        client = s3_client(timeout=2)
        for bucket in buckets():
            client.head_bucket(Bucket=bucket)
        return f"{len(buckets())} bucket(s) ok"

    return _timed("s3", head)


def check_worker() -> CheckResult:
    from config.celery import app

    def ping() -> str:
        replies = app.control.ping(timeout=1.0)
        if not replies:
            raise RuntimeError("no Celery worker answered within 1 s")
        return f"{len(replies)} worker(s)"

    return _timed("worker", ping)


CHECKS: dict[str, Callable[[], CheckResult]] = {
    "postgres": check_postgres,
    "redis": check_redis,
    "s3": check_s3,
    "worker": check_worker,
}


def health_report() -> dict[str, dict]:
    """Every dependency, checked now: {"postgres": {"ok": True, "detail": "ok (2 ms)"}, …}."""
    report = {}
    for name, check in CHECKS.items():
        if name == "worker" and not report["redis"]["ok"]:
            # Asking workers goes through the broker; without it the ask would hang.
            report[name] = {"ok": False, "detail": "broker unreachable"}
            continue
        ok, detail = check()
        report[name] = {"ok": ok, "detail": detail}
    return report


_cache: dict = {"at": None, "report": None}
_cache_lock = threading.Lock()


def cached_health_report() -> dict[str, dict]:
    """health_report(), at most HEALTH_CACHE_SECONDS old; concurrent callers wait for one run."""
    with _cache_lock:
        at, report = _cache["at"], _cache["report"]
        if at is None or time.monotonic() - at >= settings.HEALTH_CACHE_SECONDS:
            report = health_report()
            _cache.update(at=time.monotonic(), report=report)
        return report


def clear_health_cache() -> None:
    with _cache_lock:
        _cache.update(at=None, report=None)
