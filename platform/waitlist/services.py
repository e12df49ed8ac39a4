"""Writes for the waitlist and beta invites."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from .models import Invite, WaitlistEntry


class InviteError(Exception):
    """An invite that cannot be used; the message says why in plain words."""


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def waitlist_join(
    *, email: str, company: str = "", use_case: str = ""
) -> tuple[WaitlistEntry, bool]:
    """Add someone to the waitlist; joining again is fine and returns the existing entry."""
    email = email.strip().lower()
    entry = WaitlistEntry.objects.filter(email=email).first()
    if entry is not None:
        return entry, False
    try:
        with transaction.atomic():
            entry = WaitlistEntry.objects.create(email=email, company=company, use_case=use_case)
    except IntegrityError:  # two submissions raced; the other one won
        return WaitlistEntry.objects.get(email=email), False
    return entry, True


def invite_send(*, entry: WaitlistEntry) -> Invite | None:
    """Email `entry` a fresh single-use sign-up link; a resend replaces the old link.

    Returns None (and sends nothing) when the person has already joined. The link is on
    `SITE_URL`, never the host of the request that sent it: a Host header is the client's
    to write, and an invite link points at whoever wrote it.
    """
    token = secrets.token_urlsafe(32)
    now = timezone.now()
    expires_at = now + timedelta(days=settings.INVITE_TTL_DAYS)
    with transaction.atomic():
        invite = Invite.objects.select_for_update().filter(entry=entry).first()
        if invite is not None and invite.accepted_at:
            return None
        if invite is None:
            invite = Invite(entry=entry, send_count=0)
        invite.token_hash = token_hash(token)
        invite.sent_at = now
        invite.expires_at = expires_at
        invite.revoked_at = None
        invite.send_count += 1
        invite.save()
    link = settings.SITE_URL.rstrip("/") + reverse("accounts:signup", args=[token])
    context = {"entry": entry, "link": link, "expires_at": expires_at}
    send_mail(
        subject="Your invite to the Sleuth beta",
        message=render_to_string("waitlist/invite_email.txt", context),
        from_email=None,
        recipient_list=[entry.email],
    )
    return invite


def invite_revoke(*, invite: Invite) -> bool:
    """Make an unused invite's link stop working. False if it was already used or revoked."""
    updated = Invite.objects.filter(pk=invite.pk, accepted_at=None, revoked_at=None).update(
        revoked_at=timezone.now()
    )
    return bool(updated)


def invite_check(*, token: str) -> Invite:
    """The invite behind `token` if it can still be used; InviteError saying why not."""
    invite = Invite.objects.select_related("entry").filter(token_hash=token_hash(token)).first()
    if invite is None:
        raise InviteError("This invite link is not valid. Check that you copied all of it.")
    if invite.accepted_at:
        raise InviteError("This invite has already been used. Log in with the account it created.")
    if invite.revoked_at:
        raise InviteError("This invite was withdrawn. Write to us if you think that is a mistake.")
    if invite.expires_at <= timezone.now():
        raise InviteError("This invite has expired. Ask us for a new one.")
    return invite


def invite_accept(*, token: str, password: str, name: str = ""):
    """Create the invited person's account and use up the invite, all or nothing."""
    User = get_user_model()
    with transaction.atomic():
        invite = invite_check(token=token)
        # Claim the invite with a conditional update so two submissions cannot both use it.
        claimed = Invite.objects.filter(
            pk=invite.pk, accepted_at=None, revoked_at=None, expires_at__gt=timezone.now()
        ).update(accepted_at=timezone.now())
        if not claimed:
            raise InviteError(
                "This invite has already been used. Log in with the account it created."
            )
        email = invite.entry.email
        if User.objects.filter(email__iexact=email).exists():
            raise InviteError(f"An account for {email} already exists. Log in instead.")
        user = User.objects.create_user(email=email, password=password, first_name=name)
        Invite.objects.filter(pk=invite.pk).update(user=user)
    return user
