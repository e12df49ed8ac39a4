"""Prepare a deployment: migrations, buckets, an admin account. Safe to run on every start."""

import os
import secrets

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
        User = get_user_model()
        email = os.environ.get("ADMIN_EMAIL")
        password = os.environ.get("ADMIN_PASSWORD")
        if email and password:
            user, created = User.objects.get_or_create(
                email=email, defaults={"is_staff": True, "is_superuser": True}
            )
            user.is_staff = user.is_superuser = True
            user.set_password(password)
            user.save()
            self.stdout.write(f"admin: {email} ({'created' if created else 'password set'})")
            return
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("admin: exists")
            return
        email = email or "admin@localhost"
        password = secrets.token_urlsafe(12)
        User.objects.create_superuser(email=email, password=password)
        # Printed once: the next start finds the account and prints nothing.
        self.stdout.write(
            self.style.WARNING(
                f"admin: created {email} with password {password}  (shown once; "
                "set ADMIN_EMAIL and ADMIN_PASSWORD to choose your own)"
            )
        )
