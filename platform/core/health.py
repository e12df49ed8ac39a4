"""Dependency checks behind /healthz. Each returns (ok, detail) and never raises."""

import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection

CheckResult = tuple[bool, str]


def _timed(check: Callable[[], str]) -> CheckResult:
    started = time.monotonic()
    try:
        detail = check()
    except Exception as error:  # a health check reports failures, it does not raise them
        return False, f"{type(error).__name__}: {error}"
    return True, f"{detail} ({(time.monotonic() - started) * 1000:.0f} ms)"


def check_postgres() -> CheckResult:
    def query() -> str:
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            return cursor.fetchone()[0].split(" on ")[0]

    return _timed(query)


def check_redis() -> CheckResult:
    import redis

    def ping() -> str:
        client = redis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=2, socket_timeout=2
        )
        try:
            client.ping()
            return "redis " + client.info("server")["redis_version"]
        finally:
            client.close()

    return _timed(ping)


def check_s3() -> CheckResult:
    from .s3 import buckets, s3_client

    def head() -> str:
        client = s3_client(timeout=2)
        for bucket in buckets():
            client.head_bucket(Bucket=bucket)
        return "buckets " + ", ".join(buckets())

    return _timed(head)


def check_worker() -> CheckResult:
    from config.celery import app

    def ping() -> str:
        replies = app.control.ping(timeout=1.0)
        if not replies:
            raise RuntimeError("no Celery worker answered within 1 s")
        return f"{len(replies)} worker(s): " + ", ".join(sorted(n for r in replies for n in r))

    return _timed(ping)


CHECKS: dict[str, Callable[[], CheckResult]] = {
    "postgres": check_postgres,
    "redis": check_redis,
    "s3": check_s3,
    "worker": check_worker,
}


def health_report() -> dict[str, dict]:
    report = {}
    for name, check in CHECKS.items():
        if name == "worker" and not report["redis"]["ok"]:
            # Asking workers goes through the broker; without it the ask would hang.
            report[name] = {"ok": False, "detail": "broker unreachable, cannot ask workers"}
            continue
        ok, detail = check()
        report[name] = {"ok": ok, "detail": detail}
    return report
