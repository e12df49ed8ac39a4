"""Production settings refuse to start half-configured and harden cookies."""

import os
import subprocess
import sys

REQUIRED = {
    "DATABASE_URL": "postgres://u@db/sleuth",
    "REDIS_URL": "redis://redis:6379/0",
    "S3_ACCESS_KEY_ID": "key",
    "S3_SECRET_ACCESS_KEY": "secret",
    "SITE_URL": "https://sleuth.example.com",
}


def load_production(**env: str) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"SECRET_KEY", "ALLOWED_HOSTS", "DEBUG", "SITE_URL"}
    }
    code = (
        "from django.conf import settings as s; "
        "print(s.DEBUG, s.SESSION_COOKIE_SECURE, s.CSRF_COOKIE_SECURE, s.ALLOWED_HOSTS)"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        env={
            k: v
            for k, v in {
                **clean,
                **REQUIRED,
                "DJANGO_SETTINGS_MODULE": "config.settings.production",
                **env,
            }.items()
            if v is not None  # None: left out
        },
        capture_output=True,
        text=True,
    )


def test_production_refuses_to_start_without_a_secret_key():
    result = load_production(ALLOWED_HOSTS="sleuth.example.com")

    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_production_refuses_to_start_without_the_sites_address_for_mail_links():
    result = load_production(SECRET_KEY="s" * 50, ALLOWED_HOSTS="sleuth.example.com", SITE_URL=None)

    assert result.returncode != 0
    assert "SITE_URL" in result.stderr


def test_production_runs_with_debug_off_and_secure_cookies():
    result = load_production(SECRET_KEY="s" * 50, ALLOWED_HOSTS="sleuth.example.com", DEBUG="1")

    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True", "True", "['sleuth.example.com']"]
