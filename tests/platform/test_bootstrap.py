"""`manage.py bootstrap`: migrations, buckets and an admin account, safe on every start."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def bootstrap() -> str:
    out = StringIO()
    call_command("bootstrap", stdout=out)
    return out.getvalue()


def test_a_generated_admin_password_goes_to_a_private_file_never_the_log(
    monkeypatch, settings, tmp_path
):
    monkeypatch.delenv("ADMIN_EMAIL", raising=False)
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)
    settings.ADMIN_PASSWORD_FILE = str(tmp_path / "admin-password")

    first = bootstrap()
    second = bootstrap()

    password = (tmp_path / "admin-password").read_text().strip()
    admin = get_user_model().objects.get(email="admin@localhost")
    assert admin.is_superuser and admin.check_password(password)
    assert (tmp_path / "admin-password").stat().st_mode & 0o777 == 0o600
    assert password not in first and password not in second
    assert str(tmp_path / "admin-password") in first
    assert "admin: exists" in second


def test_the_admin_comes_from_the_environment_when_given(monkeypatch):
    monkeypatch.setenv("ADMIN_EMAIL", "ops@example.com")
    monkeypatch.setenv("ADMIN_PASSWORD", "correct horse battery")

    output = bootstrap()

    admin = get_user_model().objects.get(email="ops@example.com")
    assert admin.is_staff and admin.is_superuser
    assert admin.check_password("correct horse battery")
    assert "correct horse battery" not in output


def test_a_password_changed_after_creation_survives_the_next_start(monkeypatch):
    monkeypatch.setenv("ADMIN_EMAIL", "ops@example.com")
    monkeypatch.setenv("ADMIN_PASSWORD", "correct horse battery")
    bootstrap()
    admin = get_user_model().objects.get(email="ops@example.com")
    admin.set_password("a new one, chosen in the admin")
    admin.save()

    bootstrap()

    admin.refresh_from_db()
    assert admin.check_password("a new one, chosen in the admin")
