from django.contrib import admin

from .models import Document, Project, QuestionSet


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "owner__email"]
    # The judge URL is bound to the customer's key: staff changing it would send the key there.
    readonly_fields = ["owner", "judge_base_url", "judge_model"]
    exclude = ["judge_api_key_encrypted"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "kind", "size", "status", "entity", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "entity", "project__owner__email"]
    readonly_fields = [
        "project",
        "sha256",
        "s3_key",
        "sections_key",
        "size",
        "content_type",
        "kind",
    ]


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]
    search_fields = ["name", "project__owner__email"]
    readonly_fields = ["project", "s3_key", "size"]
