"""Mail sent outside the request (issue 14.8): the web side enqueues these by name
(`accounts.services.password_reset_request`), a worker runs them."""

from urllib.parse import urlsplit

from celery import shared_task
from django.conf import settings
from django.contrib.auth.forms import PasswordResetForm

SUBJECT_TEMPLATE = "registration/password_reset_subject.txt"
EMAIL_TEMPLATE = "registration/password_reset_email.txt"


@shared_task(name="accounts.tasks.password_reset_mail")
def password_reset_mail(*, email: str, **_ignored) -> None:
    """Mail a reset link to the active account with this email, if there is one. Whether
    there is one is known here only, never in the request that asked.

    The message carries the address alone: the link's host is the site's own (`SITE_URL`)
    and the templates are fixed, since the queue is no authority on either (a link built
    from a request's Host header, or a domain read from Redis, could send the reset token
    to anyone's server). Arguments of older messages still queued are ignored."""
    site = urlsplit(settings.SITE_URL)
    form = PasswordResetForm({"email": email})
    if form.is_valid():
        form.save(
            domain_override=site.netloc,
            use_https=site.scheme == "https",
            subject_template_name=SUBJECT_TEMPLATE,
            email_template_name=EMAIL_TEMPLATE,
        )
