"""Account actions that the views call."""

from django.contrib.auth import get_user_model
from django.db import transaction

from core.queues import enqueue


def password_reset_request(*, email: str) -> None:
    """Queue the reset mail for `email`. The same work for every address: whether an account
    has it is looked up by the task, so the request's answer and timing do not tell."""
    enqueue("accounts.tasks.password_reset_mail", kwargs={"email": email})  # the mail queue


def account_delete(*, user) -> None:
    """Delete an account with all it holds: every project (documents, question sets, runs,
    every object on S3) and its waitlist entry. corpora.services.DeletionRefused while one of
    its runs is active."""
    from corpora.services import project_delete
    from waitlist.models import WaitlistEntry

    with transaction.atomic():
        user = get_user_model().objects.select_for_update().get(pk=user.pk)
        for project in user.projects.all():
            project_delete(project=project)
        WaitlistEntry.objects.filter(email__iexact=user.email).delete()
        user.delete()
