"""Prepare a deployment: migrations, buckets, an admin account. Safe to run on every start."""

import os
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from core.s3 import buckets_ensure


class Command(BaseCommand):
    help = "Run migrations, create the S3 buckets and ensure an admin account exists."

    def handle(self, *args, **options):
        call_command("migrate", interactive=False, verbosity=0)
        self.stdout.write("database: migrated")
        created = buckets_ensure()
        self.stdout.write(
            f"s3: buckets ready{' (created ' + ', '.join(created) + ')' if created else ''}"
        )
        self._ensure_admin()

    def _ensure_admin(self) -> None:
        """An admin account, created once. A configured ADMIN_PASSWORD sets the password of
        the account it creates, never again (a password changed in the admin survives
        restarts); a generated one goes to a file only this user can read, never the log."""
        User = get_user_model()
        email = os.environ.get("ADMIN_EMAIL")
        password = os.environ.get("ADMIN_PASSWORD")
        if email and password:
            if User.objects.filter(email__iexact=email).exists():
                self.stdout.write(
                    f"admin: {email} exists (ADMIN_PASSWORD applies only when created)"
                )
                return
            User.objects.create_superuser(email=email, password=password)
            self.stdout.write(f"admin: {email} created")
            return
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("admin: exists")
            return
        email = email or "admin@localhost"
        password = secrets.token_urlsafe(12)
        path = Path(settings.ADMIN_PASSWORD_FILE)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        # Created readable by this user only, before a byte of the password is written.
        with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(password + "\n")
        User.objects.create_superuser(email=email, password=password)
        self.stdout.write(
            self.style.WARNING(
                f"admin: created {email}; its password is in {path} (readable by this user "
                "only; set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own)"
            )
        )
