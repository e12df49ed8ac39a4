"""Personal API tokens: a customer's programs call /v1 with one instead of a password.

Only a token's SHA-256 is stored; the token itself is shown once, when it is created. Its
first characters (the prefix) stay visible so the customer can tell their tokens apart.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class ApiToken(models.Model):
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=80)
    prefix = models.CharField(max_length=24)  # "sk-sleuth-" and a few characters more
    digest = models.CharField(max_length=64, unique=True)  # sha256 hex of the whole token
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None
