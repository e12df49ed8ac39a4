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


def test_an_admin_is_generated_and_its_password_printed_only_once(monkeypatch):
    monkeypatch.delenv("ADMIN_EMAIL", raising=False)
    monkeypatch.delenv("ADMIN_PASSWORD", raising=False)

    first = bootstrap()
    second = bootstrap()

    password = first.split("with password ")[1].split()[0]
    admin = get_user_model().objects.get(email="admin@localhost")
    assert admin.is_superuser and admin.check_password(password)
    assert password not in second
    assert "admin: exists" in second


def test_the_admin_comes_from_the_environment_when_given(monkeypatch):
    monkeypatch.setenv("ADMIN_EMAIL", "ops@example.com")
    monkeypatch.setenv("ADMIN_PASSWORD", "correct horse battery")

    output = bootstrap()

    admin = get_user_model().objects.get(email="ops@example.com")
    assert admin.is_staff and admin.is_superuser
    assert admin.check_password("correct horse battery")
    assert "correct horse battery" not in output
