"""Fixed-window rate limits on Django's cache (Redis in every environment)."""

from django.core.cache import cache
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str:
    # REMOTE_ADDR only: X-Forwarded-For is client-controlled unless a trusted proxy rewrites it.
    return request.META.get("REMOTE_ADDR", "unknown")


def rate_limit_exceeded(*, key: str, limit: int, window_seconds: int) -> bool:
    """Count one hit for `key`; True once more than `limit` hits fell in the current window."""
    cache_key = f"ratelimit:{key}"
    # add() only sets a missing key, so the window starts at the first hit and is not extended.
    if cache.add(cache_key, 1, timeout=window_seconds):
        return limit < 1
    try:
        hits = cache.incr(cache_key)
    except ValueError:  # expired between add() and incr()
        cache.add(cache_key, 1, timeout=window_seconds)
        hits = 1
    return hits > limit
