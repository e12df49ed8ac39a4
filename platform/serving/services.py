"""Writes for personal API tokens: create (the token is returned once), revoke, authenticate."""

import hashlib
import secrets
from datetime import timedelta

from django.db import transaction
from django.db.models import Q
from django.shortcuts import get_object_or_404
from django.utils import timezone

from .models import CHAT, READ, SCOPES, TRAIN, ApiToken

TOKEN_PREFIX = "sk-sleuth-"
VISIBLE_CHARS = 6  # of the random part, kept in `prefix` so tokens can be told apart
# last_used_at is written at most this often per token: a busy client would otherwise turn
# every request into a database write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def token_digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class TokenRefused(ValueError):
    """A token that cannot be minted as asked; the message says why."""


# How long a new token may live, in days (None: until revoked); the page offers these.
TOKEN_LIFETIMES = (30, 90, 365, None)


def api_token_create(
    *, user, name: str, scopes=SCOPES, expires_in_days: int | None = None
) -> tuple[ApiToken, str]:
    """A new token for `user` that may do `scopes` (some of SCOPES), expiring after
    `expires_in_days` (None: until revoked); returns the row and the token itself (never
    stored). TokenRefused for no scope or an unknown one."""
    chosen = [s for s in SCOPES if s in set(scopes)]
    if not chosen or set(scopes) - set(SCOPES):
        raise TokenRefused(f"choose the token's scopes among {', '.join(SCOPES)}")
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = timezone.now()
    token = ApiToken.objects.create(
        user=user,
        name=name.strip() or "API token",
        prefix=raw[: len(TOKEN_PREFIX) + VISIBLE_CHARS],
        digest=token_digest(raw),
        scopes=",".join(chosen),
        created_at=now,
        expires_at=now + timedelta(days=expires_in_days) if expires_in_days else None,
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


def api_tokens_revoke_all(*, user) -> int:
    """Revoke every token of `user` (a changed or reset password: whoever had the old one
    may have minted tokens with it); how many were still active."""
    return ApiToken.objects.filter(user=user, revoked_at__isnull=True).update(
        revoked_at=timezone.now()
    )


def api_token_authenticate(*, raw: str) -> ApiToken | None:
    """The active token `raw` is, with its user, or None (unknown, revoked, expired, inactive
    user). Records when it was last used."""
    if not raw.startswith(TOKEN_PREFIX):
        return None
    now = timezone.now()
    token = (
        ApiToken.objects.select_related("user")
        .filter(digest=token_digest(raw), revoked_at__isnull=True, user__is_active=True)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .first()
    )
    if token is None:
        return None
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        token.last_used_at = now
    return token


def scope_needed(method: str, path: str) -> tuple[str, ...]:
    """The scopes of which a token needs one for a /v1 request: asking an agent is chat;
    listing the agents, read or chat (an OpenAI client lists models before it chats); any
    other read is read; every write (uploads, runs and jobs, cancelling, deleting) is train.
    By method, so an endpoint added later is guarded without being listed here."""
    route = path.removeprefix("/v1").strip("/")
    if route == "chat/completions":
        return (CHAT,)
    if route == "models" or route.startswith("models/"):
        return (READ, CHAT)
    if method.upper() in ("GET", "HEAD", "OPTIONS"):
        return (READ,)
    return (TRAIN,)


# -- asking a published agent (the inference queue) -----------------------------------------

# The longest question an agent is asked, in the playground and through the chat API: about
# 250 of the model's tokens, which its context holds beside the prompt, the searches' results
# and the answer; a longer one would be cut before the agent read it.
QUESTION_MAX_CHARS = 1000


def agent_chat_enqueue(
    agent, question: str, sampling: dict | None = None, *, base_model: str | None = None
):
    """Queue one question for a published agent (serving.selectors.PublishedAgent) on the
    inference queue: `config.tasks.agent_chat` runs its search loop in the inference
    worker, which keeps agents loaded, and reports each search as progress. Returns the
    Celery AsyncResult; a question nobody picks up in SLEUTH_INFERENCE_TIMEOUT is dropped.

    With `base_model` (a name on the operator's allowlist, never a customer's text) the
    worker answers with that untrained model instead of the agent's trained weights, with
    the agent's own settings (system prompt, limits) and index: the playground's base model."""
    from django.conf import settings

    from core.queues import enqueue

    sampling = {"temperature": 0.0, "seed": 0, "max_tokens": None, **(sampling or {})}
    return enqueue(
        "config.tasks.agent_chat",
        kwargs={
            "agent": {
                "name": agent.name,
                "checkpoint_id": agent.checkpoint_id,
                "published_prefix": agent.published_prefix,
                "index_prefix": agent.index_prefix,
                **({"base_model": base_model} if base_model else {}),
            },
            "question": question,
            "sampling": sampling,
        },
        # A request nobody answers in time is dropped, never answered later.
        expires=settings.SLEUTH_INFERENCE_TIMEOUT,
    )


def agent_chat_state(task_id: str) -> dict:
    """Where a queued question stands, without waiting: `status` ("pending", "done" or
    "failed"), the `searches` made so far (each with its query and results), and when done
    the agent's whole answer (serving.inference.agent_answer's dict) as `answer`."""
    from celery.result import AsyncResult

    from config.celery import app

    result = AsyncResult(task_id, app=app)
    meta = result.backend.get_task_meta(task_id)
    status, info = meta.get("status"), meta.get("result")
    searches = info.get("searches", []) if isinstance(info, dict) else []
    if status == "SUCCESS":
        return {"status": "done", "searches": searches, "answer": info}
    if status in ("FAILURE", "REVOKED"):
        return {"status": "failed", "searches": [], "answer": None}
    return {"status": "pending", "searches": searches, "answer": None}


def agent_chat_forget(task_id: str) -> None:
    """Drop a finished question's result from the result backend (it was read), or revoke
    one that is still queued (nobody waits for it any more)."""
    from celery.result import AsyncResult

    from config.celery import app

    result = AsyncResult(task_id, app=app)
    if result.ready():
        result.forget()
    else:
        result.revoke()
