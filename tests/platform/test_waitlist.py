"""The public waitlist form on the landing page."""

import re

import pytest
from django.test import override_settings

from waitlist.models import WaitlistEntry

pytestmark = pytest.mark.django_db


def join(client, email="ann@acme.com", **extra):
    data = {"email": email, "company": "Acme", "use_case": "our 10-K filings", **extra}
    return client.post("/", data)


def test_joining_puts_the_email_on_the_waitlist(client):
    response = join(client)

    assert response.status_code == 200
    assert "ann@acme.com is on the waitlist" in response.content.decode()
    entry = WaitlistEntry.objects.get()
    assert (entry.email, entry.company, entry.use_case) == (
        "ann@acme.com",
        "Acme",
        "our 10-K filings",
    )


def notice(response) -> str:
    return re.search(r'role="status">(.*?)</p>', response.content.decode(), re.S).group(1)


def test_joining_twice_keeps_one_entry_and_does_not_say_it_was_listed(client):
    first = join(client, email="bo@acme.com")
    join(client)
    again = join(client, email="ANN@acme.com")

    assert again.status_code == 200
    assert "already" not in again.content.decode()
    assert notice(again).replace("ann@", "bo@") == notice(first)
    assert WaitlistEntry.objects.filter(email="ann@acme.com").count() == 1


def test_an_invalid_email_is_explained_in_the_form(client):
    response = join(client, email="not-an-email")

    assert "Enter a valid email address" in response.content.decode()
    assert not WaitlistEntry.objects.exists()


@override_settings(WAITLIST_RATE_LIMIT=(3, 600))
def test_the_form_is_rate_limited_per_client(client):
    statuses = [join(client, email=f"p{i}@acme.com").status_code for i in range(5)]

    assert statuses == [200, 200, 200, 429, 429]
    assert WaitlistEntry.objects.count() == 3
    assert "Too many sign-ups" in join(client, email="late@acme.com").content.decode()
