from django.contrib import admin, messages

from .models import ApiToken
from .services import api_token_revoke


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens can be seen and revoked by staff; the token itself is never stored. Revoking is
    an action, one way: a revoked token's `revoked_at` is read-only, so no edit revives it."""

    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = (
        "user",
        "name",
        "prefix",
        "digest",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    search_fields = ("user__email", "name", "prefix")
    actions = ["revoke_tokens"]

    def has_add_permission(self, request):
        return False  # a token is minted by its owner, who alone sees it once

    @admin.action(description="Revoke the selected tokens", permissions=["change"])
    def revoke_tokens(self, request, queryset):
        for token in queryset.filter(revoked_at__isnull=True):
            api_token_revoke(user=token.user, token_id=token.pk)
        messages.success(request, "The selected tokens are revoked.")
