"""Web-side fixtures: alice owns things, bob is another customer, charlie is staff."""

import pytest
from django.core.cache import cache


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters live in Redis and would leak from one test into the next."""
    try:
        cache.clear()
    except Exception:  # engine-only runs start no Redis; those tests do not use the cache
        pass


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(email="alice@example.com", password="pw-alice-1")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(email="bob@example.com", password="pw-bob-1")


@pytest.fixture
def charlie(django_user_model):
    return django_user_model.objects.create_superuser(
        email="charlie@example.com", password="pw-charlie-1"
    )
