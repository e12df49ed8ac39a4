"""Login, logout and password reset by email."""

import re

import pytest
from django.conf import settings
from django.core import mail

pytestmark = pytest.mark.django_db


def test_login_with_email_and_password_opens_the_projects(client, alice):
    response = client.post(
        "/accounts/login/", {"username": "alice@example.com", "password": "pw-alice-1"}
    )

    assert response.status_code == 302 and response["Location"] == "/projects/"


def test_a_wrong_password_is_told_in_plain_words(client, alice):
    response = client.post("/accounts/login/", {"username": "alice@example.com", "password": "x"})

    assert "did not match" in response.content.decode()


def test_logout_ends_the_session(client, alice):
    client.force_login(alice)

    client.post("/accounts/logout/")

    assert client.get("/projects/")["Location"].startswith("/accounts/login/")


def test_password_reset_by_email_sets_a_new_password(client, alice, mail_queue):
    client.post("/accounts/password-reset/", {"email": "alice@example.com"})
    assert mail_queue.deliver() == 1
    site = re.escape(settings.SITE_URL.rstrip("/"))
    link = re.search(site + r"(/accounts/password-reset/\S+/)", mail.outbox[0].body)[1]

    form_page = client.get(link, follow=True)
    client.post(
        form_page.redirect_chain[-1][0],
        {
            "new_password1": "brand-new-passphrase-4",
            "new_password2": "brand-new-passphrase-4",
        },
    )

    alice.refresh_from_db()
    assert alice.check_password("brand-new-passphrase-4")


def test_password_reset_does_not_say_whether_an_account_exists(client, mail_queue):
    response = client.post(
        "/accounts/password-reset/", {"email": "nobody@example.com"}, follow=True
    )
    mail_queue.deliver()

    assert "Check your email" in response.content.decode()
    assert mail.outbox == []


def test_signing_in_matches_the_email_in_any_case(client, alice):
    response = client.post(
        "/accounts/login/", {"username": " Alice@Example.COM", "password": "pw-alice-1"}
    )

    assert response.status_code == 302
    assert client.get("/projects/").status_code == 200


def test_a_reset_link_is_on_the_site_whatever_host_the_request_named(
    client, alice, mail_queue, settings
):
    settings.ALLOWED_HOSTS = ["*"]
    settings.SITE_URL = "https://sleuth.example.com"

    client.post(
        "/accounts/password-reset/", {"email": "alice@example.com"}, HTTP_HOST="attacker.example"
    )
    ((_name, kwargs),) = mail_queue.messages()
    assert kwargs == {"email": "alice@example.com"}  # the queue carries no host, no template
    from accounts.tasks import password_reset_mail

    password_reset_mail(**kwargs)

    assert "https://sleuth.example.com/accounts/password-reset/" in mail.outbox[0].body
    assert "attacker" not in mail.outbox[0].body


def test_a_queued_reset_message_naming_a_domain_or_template_cannot_change_the_mail(alice):
    from accounts.tasks import password_reset_mail

    password_reset_mail(
        email="alice@example.com",
        domain="attacker.example",
        use_https=False,
        email_template="registration/logged_out.html",
    )

    (message,) = mail.outbox
    assert "attacker" not in message.body and settings.SITE_URL in message.body
