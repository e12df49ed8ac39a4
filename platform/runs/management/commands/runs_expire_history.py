"""Delete the metrics, sample trajectories and events of runs that ended long ago (the
workers' sweeper does this hourly; this is for operators and cron)."""

from django.conf import settings
from django.core.management.base import BaseCommand

from runs.retention import runs_history_expire


class Command(BaseCommand):
    help = (
        "Delete the metrics, samples and events of runs that ended more than "
        "SLEUTH_RUN_RETENTION_DAYS days ago; runs, checkpoints and evaluations stay."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--days",
            type=int,
            default=None,
            help=f"Override SLEUTH_RUN_RETENTION_DAYS ({settings.SLEUTH_RUN_RETENTION_DAYS}).",
        )

    def handle(self, *args, days: int | None = None, **options):
        days = settings.SLEUTH_RUN_RETENTION_DAYS if days is None else days
        if days <= 0:
            self.stdout.write("retention is off (0 days): nothing deleted")
            return
        cleared = []
        while batch := runs_history_expire(days=days):
            cleared += batch
        self.stdout.write(
            f"deleted the history of {len(cleared)} run(s) that ended over {days} days ago"
        )
