from django.contrib import admin

from .models import Document, Project, QuestionSet


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "owner", "created_at"]
    search_fields = ["name", "owner__email"]


@admin.register(Document)
class DocumentAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "kind", "size", "status", "entity", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "entity", "project__owner__email"]
    readonly_fields = ["sha256", "s3_key", "size", "content_type", "kind"]


@admin.register(QuestionSet)
class QuestionSetAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "created_at"]
    search_fields = ["name", "project__owner__email"]
