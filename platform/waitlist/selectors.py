"""Reads for the waitlist."""

import csv
import io

from django.db.models import QuerySet

from .models import WaitlistEntry


def waitlist_csv(*, entries: QuerySet[WaitlistEntry]) -> str:
    """The entries as CSV, with their invite state, for the admin's export."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        [
            "email",
            "company",
            "use_case",
            "joined_waitlist",
            "invite_state",
            "invited_at",
            "signed_up_at",
        ]
    )
    for entry in entries.select_related("invite").order_by("created_at"):
        invite = getattr(entry, "invite", None)
        writer.writerow(
            [
                entry.email,
                entry.company,
                entry.use_case,
                entry.created_at.isoformat(),
                invite.state if invite else "waiting",
                invite.sent_at.isoformat() if invite else "",
                invite.accepted_at.isoformat() if invite and invite.accepted_at else "",
            ]
        )
    return out.getvalue()
