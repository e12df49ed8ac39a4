"""Runs and checkpoints in the admin: read-only. A run's config names what workers load and
call, and a checkpoint's keys name what a customer downloads, so staff never edit them (a
changed config could send a worker's secret elsewhere; a changed key could hand one tenant
another's archive). Deleting goes through the service, so S3 is cleaned too."""

from django.contrib import admin

from .models import Checkpoint, Run, RunEvent
from .services import run_delete_objects


class RunEventInline(admin.TabularInline):
    model = RunEvent
    extra = 0
    readonly_fields = ["at", "kind", "status", "message"]

    def has_add_permission(self, request, obj=None):
        return False


class ReadOnlyAdmin(admin.ModelAdmin):
    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Run)
class RunAdmin(ReadOnlyAdmin):
    list_display = ["name", "project", "status", "current_step", "total_steps", "created_at"]
    list_filter = ["status", "preset"]
    search_fields = ["name", "project__name", "project__owner__email"]
    inlines = [RunEventInline]

    def has_delete_permission(self, request, obj=None):
        if obj is not None and obj.is_active:
            return False  # a worker may still write to it
        return super().has_delete_permission(request, obj)

    def delete_model(self, request, obj):
        run_delete_objects(run=obj)

    def delete_queryset(self, request, queryset):
        for run in queryset.exclude(status__in=Run.ACTIVE):
            run_delete_objects(run=run)


@admin.register(Checkpoint)
class CheckpointAdmin(ReadOnlyAdmin):
    list_display = ["run", "step", "is_final", "created_at"]

    def has_delete_permission(self, request, obj=None):
        return False  # retention and run deletion remove checkpoints with their files
