"""The admin's view of the waitlist: search, filter, export, and send/resend/revoke invites."""

from django.contrib import admin, messages
from django.db.models import Q
from django.http import HttpResponse
from django.utils import timezone

from .models import Invite, WaitlistEntry
from .selectors import waitlist_csv
from .services import invite_revoke, invite_send


class InviteStateFilter(admin.SimpleListFilter):
    title = "invite"
    parameter_name = "invite"

    def lookups(self, request, model_admin):
        return [
            ("waiting", "Not invited"),
            ("invited", "Invited, not joined"),
            ("expired", "Expired"),
            ("revoked", "Revoked"),
            ("joined", "Joined"),
        ]

    def queryset(self, request, queryset):
        now = timezone.now()
        open_invite = Q(invite__accepted_at=None, invite__revoked_at=None)
        match self.value():
            case "waiting":
                return queryset.filter(invite=None)
            case "invited":
                return queryset.filter(open_invite, invite__expires_at__gt=now)
            case "expired":
                return queryset.filter(open_invite, invite__expires_at__lte=now)
            case "revoked":
                return queryset.filter(invite__accepted_at=None).exclude(invite__revoked_at=None)
            case "joined":
                return queryset.exclude(invite__accepted_at=None).exclude(invite=None)
        return queryset


class InviteInline(admin.StackedInline):
    model = Invite
    can_delete = False
    extra = 0
    fields = readonly_fields = [
        "state",
        "sent_at",
        "send_count",
        "expires_at",
        "revoked_at",
        "accepted_at",
        "user",
    ]

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(WaitlistEntry)
class WaitlistEntryAdmin(admin.ModelAdmin):
    list_display = ["email", "company", "created_at", "invite_state", "invited_at", "joined_at"]
    list_filter = [InviteStateFilter, "created_at"]
    search_fields = ["email", "company", "use_case"]
    date_hierarchy = "created_at"
    inlines = [InviteInline]
    actions = ["send_beta_invite", "revoke_invite", "export_csv"]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("invite")

    @admin.display(description="invite")
    def invite_state(self, entry):
        invite = getattr(entry, "invite", None)
        return invite.state if invite else "—"

    @admin.display(description="invited at", ordering="invite__sent_at")
    def invited_at(self, entry):
        invite = getattr(entry, "invite", None)
        return invite.sent_at if invite else None

    @admin.display(description="joined at", ordering="invite__accepted_at")
    def joined_at(self, entry):
        invite = getattr(entry, "invite", None)
        return invite.accepted_at if invite else None

    # Actions need more than the view permission: inviting and revoking change invites, and
    # the export hands out every entry's personal data.
    def has_invite_permission(self, request):
        return request.user.has_perms(["waitlist.add_invite", "waitlist.change_invite"])

    def has_revoke_permission(self, request):
        return request.user.has_perm("waitlist.change_invite")

    def has_export_permission(self, request):
        return request.user.has_perm("waitlist.change_waitlistentry")

    @admin.action(description="Send beta invite (or resend a new link)", permissions=["invite"])
    def send_beta_invite(self, request, queryset):
        sent = skipped = 0
        for entry in queryset:
            if invite_send(entry=entry):
                sent += 1
            else:
                skipped += 1
        self.message_user(request, f"Sent {sent} invite(s).", messages.SUCCESS)
        if skipped:
            self.message_user(request, f"Skipped {skipped} who already joined.", messages.WARNING)

    @admin.action(description="Revoke invite", permissions=["revoke"])
    def revoke_invite(self, request, queryset):
        revoked = sum(
            invite_revoke(invite=entry.invite) for entry in queryset if hasattr(entry, "invite")
        )
        self.message_user(request, f"Revoked {revoked} invite(s).", messages.SUCCESS)

    @admin.action(description="Export selected as CSV", permissions=["export"])
    def export_csv(self, request, queryset):
        response = HttpResponse(waitlist_csv(entries=queryset), content_type="text/csv")
        response["Content-Disposition"] = 'attachment; filename="waitlist.csv"'
        return response


@admin.register(Invite)
class InviteAdmin(admin.ModelAdmin):
    list_display = ["entry", "state", "sent_at", "send_count", "expires_at", "accepted_at", "user"]
    search_fields = ["entry__email"]
    readonly_fields = [
        "entry",
        "token_hash",
        "sent_at",
        "send_count",
        "expires_at",
        "revoked_at",
        "accepted_at",
        "user",
    ]

    def has_add_permission(self, request):
        return False  # invites are sent from the waitlist, never typed in
