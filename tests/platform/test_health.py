"""/healthz: a cheap public liveness check. /healthz/details: one entry per dependency, 200
only when every one is ok, for staff or a probe on this machine, cached, never saying what a
dependency is or why it failed."""

import pytest
from django.test import override_settings

from core import health

pytestmark = pytest.mark.django_db

OUTSIDE = {"REMOTE_ADDR": "203.0.113.9"}


@pytest.fixture(autouse=True)
def _fresh_health_cache():
    health.clear_health_cache()
    yield
    health.clear_health_cache()


def test_healthz_is_public_cheap_and_says_nothing(client, monkeypatch):
    def must_not_run():
        raise AssertionError("liveness asked a dependency")

    monkeypatch.setattr(health, "CHECKS", {"postgres": must_not_run})
    response = client.get("/healthz", **OUTSIDE)
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"].startswith("text/plain")


def test_details_are_refused_to_the_public_and_to_a_proxied_request(client, alice):
    assert client.get("/healthz/details", **OUTSIDE).status_code == 403
    # Loopback, but through a reverse proxy on this machine: a visitor from anywhere.
    proxied = client.get("/healthz/details", HTTP_X_FORWARDED_FOR="203.0.113.9")
    assert proxied.status_code == 403
    client.force_login(alice)  # a customer is not staff
    assert client.get("/healthz/details", **OUTSIDE).status_code == 403


def test_details_are_green_for_staff_with_real_services_and_a_live_worker(
    client, charlie, celery_worker
):
    client.force_login(charlie)
    response = client.get("/healthz/details", **OUTSIDE)

    body = response.json()
    assert response.status_code == 200, body
    assert set(body) == {"postgres", "redis", "s3", "worker"}
    assert all(entry["ok"] is True for entry in body.values())
    # No versions, host or bucket names: how it answered and how fast, nothing else.
    text = response.content.decode()
    for secretish in ("PostgreSQL", "redis_version", "sleuth-", "@", "test-worker"):
        assert secretish not in text
    assert body["postgres"]["detail"].startswith("ok (")


def test_details_answer_a_probe_on_this_machine(client):
    response = client.get("/healthz/details")  # the test client comes from 127.0.0.1
    assert response.status_code in (200, 503)
    assert set(response.json()) == {"postgres", "redis", "s3", "worker"}


def test_details_are_503_and_name_the_broken_dependency_without_its_error(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/healthz/details")

    body = response.json()
    assert response.status_code == 503
    assert body["redis"] == {"ok": False, "detail": "unreachable"}
    assert "127.0.0.1" not in response.content.decode()
    assert body["postgres"]["ok"] is True
    assert body["worker"] == {"ok": False, "detail": "broker unreachable"}


def test_details_report_a_missing_bucket(client):
    with override_settings(S3_ARTIFACTS_BUCKET="no-such-bucket-anywhere"):
        response = client.get("/healthz/details")

    assert response.status_code == 503
    assert response.json()["s3"] == {"ok": False, "detail": "unreachable"}
    assert "no-such-bucket" not in response.content.decode()


def test_details_are_cached_for_a_few_seconds(client, monkeypatch):
    calls = []

    def counted():
        calls.append(1)
        return True, "ok (0 ms)"

    monkeypatch.setattr(health, "CHECKS", {name: counted for name in health.CHECKS})
    with override_settings(HEALTH_CACHE_SECONDS=60):
        for _ in range(5):
            assert client.get("/healthz/details").status_code == 200
    assert len(calls) == 4  # one run of the four checks for five requests
