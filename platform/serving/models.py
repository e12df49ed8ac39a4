"""Personal API tokens: a customer's programs call /v1 with one instead of a password.

Only a token's SHA-256 is stored; the token itself is shown once, when it is created. Its
first characters (the prefix) stay visible so the customer can tell their tokens apart.

A token holds scopes (what it may do: read, train, chat; `serving.services.scope_needed`
says which a request needs) and may expire: a token leaked from a CI log that may only chat
cannot delete a project or download a checkpoint, and one minted for a month stops by itself.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

READ, TRAIN, CHAT = "read", "train", "chat"
SCOPES = (READ, TRAIN, CHAT)
SCOPE_LABELS = {
    READ: "read: list and download projects, documents, runs and checkpoints",
    TRAIN: "train: upload, start and cancel runs and jobs, delete",
    CHAT: "chat: ask the published agents (chat completions, models)",
}


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=24)  # "sk-sleuth-" and a few characters more
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the whole token
    # Comma-separated, in SCOPES' order. Tokens minted before scopes could do everything, and
    # keep doing it (the migration's default) until their owner replaces them.
    scopes = models.CharField(max_length=40, default=",".join(SCOPES))
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField(null=True, blank=True)  # None: until revoked
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def scope_list(self) -> list[str]:
        return [s for s in self.scopes.split(",") if s]

    def allows(self, scope: str) -> bool:
        return scope in self.scope_list

    @property
    def is_expired(self) -> bool:
        return self.expires_at is not None and self.expires_at <= timezone.now()

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None and not self.is_expired
