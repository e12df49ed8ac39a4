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


# -- asking a published agent (the inference queue) -----------------------------------------

# The longest question an agent is asked, in the playground and through the chat API: about
# 250 of the model's tokens, which its context holds beside the prompt, the searches' results
# and the answer; a longer one would be cut before the agent read it.
QUESTION_MAX_CHARS = 1000


def agent_chat_enqueue(
    agent, question: str, sampling: dict | None = None, *, base_model: str | None = None
):
    """Queue one question for a published agent (serving.selectors.PublishedAgent) on the
    inference queue: `workers.tasks.agent_chat` runs its search loop in the inference
    worker, which keeps agents loaded, and reports each search as progress. Returns the
    Celery AsyncResult; a question nobody picks up in SLEUTH_INFERENCE_TIMEOUT is dropped.

    With `base_model` (a name on the operator's allowlist, never a customer's text) the
    worker answers with that untrained model instead of the agent's trained weights, with
    the agent's own settings (system prompt, limits) and index: the playground's base model."""
    from django.conf import settings

    from config.celery import app

    sampling = {"temperature": 0.0, "seed": 0, "max_tokens": None, **(sampling or {})}
    return app.send_task(
        "workers.tasks.agent_chat",
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
        queue=settings.SLEUTH_INFERENCE_QUEUE,
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
