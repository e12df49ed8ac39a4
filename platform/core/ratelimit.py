"""Fixed-window rate limits on Django's cache (Redis in every environment), the client address
they are keyed on, the throttles on the login, password reset and sign-up forms, and the
per-account limits on costly work (reward previews, uploads, new projects)."""

import hashlib
import ipaddress
import logging
from functools import lru_cache

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest
from django.shortcuts import render
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

_Address = ipaddress.IPv4Address | ipaddress.IPv6Address


@lru_cache(maxsize=8)
def _trusted_networks(proxies: tuple[str, ...]) -> tuple:
    return tuple(ipaddress.ip_network(p.strip(), strict=False) for p in proxies if p.strip())


def _address(text: str) -> _Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def client_ip(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, unless that is one of TRUSTED_PROXIES; then the
    nearest address in X-Forwarded-For that is not a trusted proxy (each proxy appends the
    address it heard from, so the entries left of it are whatever the client wrote)."""
    remote = request.META.get("REMOTE_ADDR", "")
    networks = _trusted_networks(tuple(settings.TRUSTED_PROXIES))
    address = _address(remote)
    if address is None:
        return remote or "unknown"

    def trusted(candidate: _Address) -> bool:
        return any(candidate in network for network in networks)

    if not trusted(address):
        return str(address)
    for hop in reversed(request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")):
        hop_address = _address(hop)
        if hop_address is None:
            break  # not written by a trusted proxy: go no further
        if not trusted(hop_address):
            return str(hop_address)
    return str(address)


def client_bucket(request: HttpRequest) -> str:
    """The rate-limit bucket of the client's address: the address, or its /64 for IPv6 (one
    subscriber usually holds a whole /64)."""
    ip = client_ip(request)
    address = _address(ip)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is None:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    if isinstance(address, ipaddress.IPv6Address):
        return str(address.ipv4_mapped)
    return ip


def account_key(value: str) -> str:
    """A bounded cache key for what a form names an account by (email, invite token)."""
    return hashlib.sha256(value.strip().lower().encode()).hexdigest()[:32]


def rate_limit_exceeded(*, key: str, limit: int, window_seconds: int) -> bool:
    """Count one hit for `key`; True once more than `limit` hits fell in the current window.

    With the cache unreachable the hit is let through and the outage logged: a limiter whose
    store is down must not turn every page into a 500 (the broker on the same Redis is down
    too, so nothing costly can be queued meanwhile)."""
    cache_key = f"ratelimit:{key}"
    try:
        # add() only sets a missing key, so the window starts at the first hit and is not
        # extended.
        if cache.add(cache_key, 1, timeout=window_seconds):
            return limit < 1
        try:
            hits = cache.incr(cache_key)
        except ValueError:  # expired between add() and incr()
            cache.add(cache_key, 1, timeout=window_seconds)
            hits = 1
    except RedisError:
        logger.error("rate limit %s not counted: the cache is unreachable", key.split(":")[0])
        return False
    return hits > limit


# The throttled forms: view name -> (the AUTH_RATE_LIMITS entry, the field or URL argument
# naming the account). The site's and the admin's login share one count per account.
THROTTLED_VIEWS = {
    "accounts:login": ("login", "username"),
    "admin:login": ("login", "username"),
    "accounts:password_reset": ("password_reset", "email"),
    "accounts:signup": ("signup", "token"),
}


def limit_reached(*, key: str, limit: int) -> bool:
    """Whether `key` already holds `limit` hits in its window, counting none (fails open, as
    `rate_limit_exceeded`)."""
    try:
        return (cache.get(f"ratelimit:{key}") or 0) >= limit
    except RedisError:
        logger.error("rate limit %s not read: the cache is unreachable", key.split(":")[0])
        return False


def count_hit(*, key: str, window_seconds: int) -> None:
    """Count one hit for `key` without deciding anything."""
    rate_limit_exceeded(key=key, limit=1 << 30, window_seconds=window_seconds)


# A login's failures are what guessing a password costs; a success costs nothing. They count
# per account and client address ("account"), so that someone who knows an address cannot
# lock its owner out from another address, and per account from every address together
# ("account_any", a higher limit), which bounds guessing spread over many addresses: past it
# the account's logins wait, the owner's too, a trade the docs' security table states.
def login_failure_keys(request: HttpRequest, account: str) -> list[tuple[str, int, int]]:
    """(key, limit, window) of each count a failed login adds to."""
    limits = settings.AUTH_RATE_LIMITS["login"]
    who = account_key(account)
    return [
        (f"login:account:{who}:{client_bucket(request)}", *limits["account"]),
        (f"login:account-any:{who}", *limits["account_any"]),
    ]


def login_throttled(request: HttpRequest, account: str) -> int | None:
    """The window to wait before this client may try `account` again (its address over its
    attempts, or the account over its failures), else None. Counts the attempt against the
    address; failures are counted after the view (`AuthThrottleMiddleware`)."""
    limit, window = settings.AUTH_RATE_LIMITS["login"]["ip"]
    if rate_limit_exceeded(
        key=f"login:ip:{client_bucket(request)}", limit=limit, window_seconds=window
    ):
        return window
    for key, limit, window in login_failure_keys(request, account) if account else []:
        if limit_reached(key=key, limit=limit):
            return window
    return None


def throttled(request: HttpRequest, action: str, account: str) -> int | None:
    """Count one attempt at `action` by this client for `account`; the window (seconds) to
    wait when the client or the account went over its limit, else None."""
    limits = settings.AUTH_RATE_LIMITS[action]
    limit, window = limits["ip"]
    if rate_limit_exceeded(
        key=f"{action}:ip:{client_bucket(request)}", limit=limit, window_seconds=window
    ):
        return window
    limit, window = limits["account"]
    if account and rate_limit_exceeded(
        key=f"{action}:account:{account_key(account)}", limit=limit, window_seconds=window
    ):
        return window
    return None


# Per-account limits on costly work a signed-in customer asks for: kind -> the setting, each
# (hits, window in seconds). One count per account and kind, whether the website or /v1 asks,
# so that neither can be used to dodge the other.
ACCOUNT_RATE_LIMITS = {
    "preview": ("SLEUTH_PREVIEW_RATE_LIMIT", "reward previews"),
    "upload": ("SLEUTH_UPLOAD_RATE_LIMIT", "uploaded files"),
    "project": ("SLEUTH_PROJECT_RATE_LIMIT", "new projects"),
}


def account_throttled(kind: str, user) -> int | None:
    """Count one `kind` (a reward preview, one uploaded file, a new project) for `user`'s
    account; the window (seconds) to wait when that took it over its limit, else None."""
    limit, window = getattr(settings, ACCOUNT_RATE_LIMITS[kind][0])
    if rate_limit_exceeded(key=f"{kind}:user:{user.pk}", limit=limit, window_seconds=window):
        return window
    return None


def _period(seconds: int) -> str:
    if seconds % 3600 == 0:
        return "hour" if seconds == 3600 else f"{seconds // 3600} hours"
    if seconds % 60 == 0:
        return "minute" if seconds == 60 else f"{seconds // 60} minutes"
    return f"{seconds} seconds"


def retry_minutes(window: int) -> int:
    return max(1, -(-window // 60))


def account_limit_message(kind: str) -> str:
    """Why an account's `kind` was refused, e.g. "Your account has reached its limit of 20
    reward previews per 10 minutes."."""
    setting, what = ACCOUNT_RATE_LIMITS[kind]
    limit, window = getattr(settings, setting)
    return f"Your account has reached its limit of {limit} {what} per {_period(window)}."


def retry_words(window: int) -> str:
    minutes = retry_minutes(window)
    return f"Try again in {minutes} minute{'s' if minutes != 1 else ''}."


def too_many_requests(request: HttpRequest, window: int, message: str = ""):
    response = render(
        request,
        "429.html",
        {"message": message, "minutes": retry_minutes(window)},
        status=429,
    )
    response["Retry-After"] = str(window)
    return response


class AuthThrottleMiddleware:
    """429 for POSTs to the login, admin login, password reset and sign-up forms past their
    per-address or per-account limits. Last in MIDDLEWARE: it runs after the CSRF check."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        account = getattr(request, "_login_account", None)
        # A login form answered with itself is a failed login; success redirects.
        if account and response.status_code == 200:
            for key, _limit, window in login_failure_keys(request, account):
                count_hit(key=key, window_seconds=window)
        return response

    def process_view(self, request, view_func, view_args, view_kwargs):
        if request.method != "POST" or request.resolver_match is None:
            return None
        entry = THROTTLED_VIEWS.get(request.resolver_match.view_name)
        if entry is None:
            return None
        action, field = entry
        account = str(view_kwargs.get(field) or request.POST.get(field, ""))
        if action == "login":
            window = login_throttled(request, account)
            request._login_account = account if window is None else None
        else:
            window = throttled(request, action, account)
        if window is None:
            return None
        return too_many_requests(request, window)
