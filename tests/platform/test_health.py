"""/healthz: one entry per dependency, 200 only when every one is ok."""

import pytest
from django.test import override_settings

pytestmark = pytest.mark.django_db


def test_healthz_is_green_with_real_services_and_a_live_worker(client, celery_worker):
    response = client.get("/healthz")

    body = response.json()
    assert response.status_code == 200, body
    assert set(body) == {"postgres", "redis", "s3", "worker"}
    assert all(entry["ok"] is True for entry in body.values())
    assert "PostgreSQL" in body["postgres"]["detail"]


def test_healthz_is_503_and_names_the_broken_dependency_when_redis_is_unreachable(client):
    with override_settings(REDIS_URL="redis://127.0.0.1:1/0"):
        response = client.get("/healthz")

    body = response.json()
    assert response.status_code == 503
    assert body["redis"]["ok"] is False
    assert "Connection" in body["redis"]["detail"]
    assert body["postgres"]["ok"] is True
    assert body["worker"] == {"ok": False, "detail": "broker unreachable, cannot ask workers"}


def test_healthz_reports_a_missing_bucket(client):
    with override_settings(S3_ARTIFACTS_BUCKET="no-such-bucket-anywhere"):
        response = client.get("/healthz")

    assert response.status_code == 503
    assert response.json()["s3"]["ok"] is False
