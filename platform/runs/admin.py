from django.contrib import admin

from .models import Checkpoint, Run, RunEvent


class RunEventInline(admin.TabularInline):
    model = RunEvent
    extra = 0
    readonly_fields = ["at", "kind", "status", "message"]


@admin.register(Run)
class RunAdmin(admin.ModelAdmin):
    list_display = ["name", "project", "status", "current_step", "total_steps", "created_at"]
    list_filter = ["status", "preset"]
    search_fields = ["name", "project__name", "project__owner__email"]
    inlines = [RunEventInline]


@admin.register(Checkpoint)
class CheckpointAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "is_final", "created_at"]
