"""Beta invites: sent from the admin, single-use, expiring, accepted by POST only."""

import re
from datetime import timedelta

import pytest
from django.conf import settings
from django.core import mail
from django.utils import timezone

from waitlist.models import Invite, WaitlistEntry

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/waitlist/waitlistentry/"


@pytest.fixture
def entry():
    return WaitlistEntry.objects.create(email="ann@acme.com", company="Acme")


def admin_action(client, action, *entries):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [e.pk for e in entries]}, follow=True
    )


def invite_link(message) -> str:
    site = re.escape(settings.SITE_URL.rstrip("/"))
    return re.search(site + r"(/accounts/signup/\S+/)", message.body).group(1)


def signup(client, link, password="a-long-passphrase-9"):
    return client.post(link, {"name": "Ann", "password1": password, "password2": password})


@pytest.fixture
def invited(client, charlie, entry):
    client.force_login(charlie)
    admin_action(client, "send_beta_invite", entry)
    client.logout()
    return invite_link(mail.outbox[-1])


def test_the_admin_bulk_action_emails_each_entry_a_link(client, charlie, entry):
    other = WaitlistEntry.objects.create(email="bo@beta.io")
    client.force_login(charlie)

    response = admin_action(client, "send_beta_invite", entry, other)

    assert "Sent 2 invite(s)" in response.content.decode()
    assert sorted(m.to[0] for m in mail.outbox) == ["ann@acme.com", "bo@beta.io"]
    assert "/accounts/signup/" in mail.outbox[0].body


def test_opening_the_link_shows_the_form_without_using_the_invite(client, invited):
    response = client.get(invited)

    assert response.status_code == 200
    assert "ann@acme.com" in response.content.decode()
    assert Invite.objects.get().accepted_at is None


def test_posting_the_form_creates_the_account_and_logs_in(client, invited, django_user_model):
    response = signup(client, invited)

    assert response.status_code == 302
    user = django_user_model.objects.get(email="ann@acme.com")
    assert user.first_name == "Ann"
    assert client.get("/projects/").status_code == 200
    invite = Invite.objects.get()
    assert invite.user == user and invite.state == "joined"


def test_an_invite_works_only_once(client, invited):
    signup(client, invited)
    client.logout()

    response = signup(client, invited, password="another-passphrase-7")

    assert response.status_code == 410
    assert "already been used" in response.content.decode()


def test_an_expired_invite_is_refused_in_plain_words(client, invited):
    Invite.objects.update(expires_at=timezone.now() - timedelta(minutes=1))

    response = client.get(invited)

    assert response.status_code == 410
    assert "expired" in response.content.decode()


def test_a_weak_password_is_explained_and_keeps_the_invite(client, invited, django_user_model):
    response = signup(client, invited, password="123")

    assert response.status_code == 200
    assert "too short" in response.content.decode()
    assert not django_user_model.objects.filter(email="ann@acme.com").exists()


def test_a_revoked_invite_stops_working(client, charlie, entry, invited):
    client.force_login(charlie)
    admin_action(client, "revoke_invite", entry)
    client.logout()

    assert client.get(invited).status_code == 410
    assert Invite.objects.get().state == "revoked"


def test_resending_replaces_the_link(client, charlie, entry, invited):
    client.force_login(charlie)
    admin_action(client, "send_beta_invite", entry)
    client.logout()
    new_link = invite_link(mail.outbox[-1])

    assert client.get(invited).status_code == 410
    assert signup(client, new_link).status_code == 302
    assert Invite.objects.get().send_count == 2


def test_the_admin_sees_who_was_invited_and_who_joined(client, charlie, entry, invited):
    signup(client, invited)
    WaitlistEntry.objects.create(email="waiting@zeta.com")
    client.force_login(charlie)

    joined = client.get(CHANGELIST, {"invite": "joined"}).content.decode()
    waiting = client.get(CHANGELIST, {"invite": "waiting"}).content.decode()

    assert "ann@acme.com" in joined and "waiting@zeta.com" not in joined
    assert "waiting@zeta.com" in waiting and "ann@acme.com" not in waiting


def test_the_admin_searches_the_waitlist(client, charlie, entry):
    WaitlistEntry.objects.create(email="bo@beta.io", company="Beta")
    client.force_login(charlie)

    page = client.get(CHANGELIST, {"q": "acme"}).content.decode()

    assert "ann@acme.com" in page and "bo@beta.io" not in page


def test_the_admin_exports_entries_with_their_invite_state(client, charlie, entry, invited):
    WaitlistEntry.objects.create(email="bo@beta.io")
    client.force_login(charlie)

    response = admin_action(client, "export_csv", *WaitlistEntry.objects.all())

    rows = response.content.decode().splitlines()
    assert rows[0].startswith("email,company,use_case,joined_waitlist,invite_state")
    assert any(r.startswith("ann@acme.com,Acme") and ",invited," in r for r in rows)
    assert any(r.startswith("bo@beta.io") and ",waiting," in r for r in rows)


def test_an_invite_link_is_on_the_site_whatever_host_the_admin_request_named(
    client, charlie, entry, settings
):
    settings.ALLOWED_HOSTS = ["*"]
    settings.SITE_URL = "https://sleuth.example.com"
    client.force_login(charlie)

    client.post(
        CHANGELIST,
        {"action": "send_beta_invite", "_selected_action": [entry.pk]},
        HTTP_HOST="attacker.example",
    )

    (message,) = mail.outbox
    assert "https://sleuth.example.com/accounts/signup/" in message.body
    assert "attacker" not in message.body


def test_an_invite_mail_carries_nothing_typed_into_the_waitlist_form(client, charlie):
    # Anyone may put anyone's address on the waitlist, with any company name.
    lure = WaitlistEntry.objects.create(
        email="victim@example.com",
        company="Acme. URGENT: confirm your bank details at http://evil.example",
        use_case="click http://evil.example",
    )
    client.force_login(charlie)

    admin_action(client, "send_beta_invite", lure)

    (message,) = mail.outbox
    assert "evil.example" not in message.body and "URGENT" not in message.body
    assert "/accounts/signup/" in message.body
    assert message.body.splitlines()[2] == "You asked to try Sleuth. Your invite is ready:"
