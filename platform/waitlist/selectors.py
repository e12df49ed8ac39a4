"""Reads for the waitlist."""

import csv
import io

from django.db.models import QuerySet

from .models import WaitlistEntry

# A cell starting with one of these is a formula to a spreadsheet (OWASP "CSV injection"); the
# public form lets anyone type one, so such a cell is written with a leading apostrophe.
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: str) -> str:
    return f"'{value}" if value.startswith(_FORMULA_STARTS) else value


def waitlist_csv(*, entries: QuerySet[WaitlistEntry]) -> str:
    """The entries as CSV, with their invite state, for the admin's export. Cells that a
    spreadsheet would run as formulas are escaped."""
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
        row = [
            entry.email,
            entry.company,
            entry.use_case,
            entry.created_at.isoformat(),
            invite.state if invite else "waiting",
            invite.sent_at.isoformat() if invite else "",
            invite.accepted_at.isoformat() if invite and invite.accepted_at else "",
        ]
        writer.writerow([csv_cell(cell) for cell in row])
    return out.getvalue()
