"""Waitlist entries and the single-use beta invites sent to them."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class WaitlistEntry(models.Model):
    """Someone who asked to try Sleuth, from the public form on the landing page."""

    email = models.EmailField(unique=True)
    company = models.CharField(max_length=200, blank=True)
    use_case = models.TextField("what they want to search", blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        verbose_name_plural = "waitlist entries"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.email


class Invite(models.Model):
    """A beta invite: a link with a secret token, good for one sign-up until it expires.

    Only the token's SHA-256 is stored, so a database leak does not leak working links.
    Resending replaces the token (the old link stops working); revoking kills it.
    """

    entry = models.OneToOneField(WaitlistEntry, on_delete=models.CASCADE, related_name="invite")
    token_hash = models.CharField(max_length=64, unique=True)
    sent_at = models.DateTimeField()
    expires_at = models.DateTimeField()
    send_count = models.PositiveIntegerField(default=1)
    revoked_at = models.DateTimeField(null=True, blank=True)
    accepted_at = models.DateTimeField(null=True, blank=True)
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="invite",
    )

    def __str__(self) -> str:
        return f"invite for {self.entry.email}"

    @property
    def state(self) -> str:
        if self.accepted_at:
            return "joined"
        if self.revoked_at:
            return "revoked"
        if self.expires_at <= timezone.now():
            return "expired"
        return "invited"
