from django.contrib import admin

from .models import Document, Project, QuestionSet


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "owner__email"]
    # The judge URL is bound to the customer's key: staff changing it would send the key there.
    # The index prefix names the S3 folder workers load the project's index from: changed, it
    # could point them at another tenant's.
    readonly_fields = ["owner", "judge_base_url", "judge_model", "index_prefix"]
    exclude = ["judge_api_key_encrypted"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "kind", "size", "status", "entity", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "entity", "project__owner__email"]
    # Storage keys name what workers read (another tenant's, if changed); the status and the
    # parse lease are the pipeline's, which a hand edit would desynchronise from S3.
    readonly_fields = [
        "project",
        "sha256",
        "s3_key",
        "sections_key",
        "size",
        "content_type",
        "kind",
        "status",
        "error",
        "pages",
        "parse_started_at",
        "parse_deadline",
        "parse_requeues",
        "parse_queued_at",
        "looks_like",
    ]


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]
    search_fields = ["name", "project__owner__email"]
    readonly_fields = ["project", "s3_key", "size", "generated_by"]
