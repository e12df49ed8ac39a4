"""Writes for personal API tokens: create (the token is returned once), revoke, authenticate."""

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.shortcuts import get_object_or_404
from django.utils import timezone

from .models import ApiToken

TOKEN_PREFIX = "sk-sleuth-"
VISIBLE_CHARS = 6  # of the random part, kept in `prefix` so tokens can be told apart
# last_used_at is written at most this often per token: a busy client would otherwise turn
# every request into a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def api_token_create(*, user, name: str) -> tuple[ApiToken, str]:
    """A new token for `user`; returns the row and the token itself (never stored)."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name.strip() or "API token",
        prefix=raw[: len(TOKEN_PREFIX) + VISIBLE_CHARS],
        digest=token_digest(raw),
    )
    return token, raw


def api_token_revoke(*, user, token_id: int) -> ApiToken:
    """Revoke one of `user`'s tokens (Http404 for anyone else's); it stops working at once."""
    with transaction.atomic():
        token = get_object_or_404(ApiToken.objects.select_for_update(), pk=token_id, user=user)
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
    return token


def api_token_authenticate(*, raw: str) -> ApiToken | None:
    """The active token `raw` is, with its user, or None (unknown, revoked, inactive user).
    Records when it was last used."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(raw), revoked_at__isnull=True, user__is_active=True)
        .first()
    )
    if token is None:
        return None
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token
