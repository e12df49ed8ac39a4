"""Mail sent outside the request (issue 14.8): the web side enqueues these by name
(`accounts.services.password_reset_request`), a worker runs them."""

from celery import shared_task
from django.contrib.auth.forms import PasswordResetForm


@shared_task(name="accounts.tasks.password_reset_mail")
def password_reset_mail(
    *, email: str, domain: str, use_https: bool, subject_template: str, email_template: str
) -> None:
    """Mail a reset link to the active account with this email, if there is one. Whether
    there is one is known here only, never in the request that asked."""
    form = PasswordResetForm({"email": email})
    if form.is_valid():
        form.save(
            domain_override=domain,
            use_https=use_https,
            subject_template_name=subject_template,
            email_template_name=email_template,
        )
