"""Account actions that the views call."""

from django.conf import settings


def password_reset_request(
    *, email: str, domain: str, use_https: bool, subject_template: str, email_template: str
) -> None:
    """Queue the reset mail for `email`. The same work for every address: whether an account
    has it is looked up by the task, so the request's answer and timing do not tell."""
    from config.celery import app

    app.send_task(
        "accounts.tasks.password_reset_mail",
        kwargs={
            "email": email,
            "domain": domain,
            "use_https": use_https,
            "subject_template": subject_template,
            "email_template": email_template,
        },
        queue=settings.SLEUTH_MAIL_QUEUE,
    )
