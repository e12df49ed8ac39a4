"""No platform credential reaches a URL a customer typed, the customer's own judge key is
stored encrypted and never shown back, and a customer's judge URL cannot reach the
platform's private network (SSRF), from the web process (reward preview) or a run's judge.

Judges are real local HTTP servers that log every request's headers (see
tests/helpers/judges.py); `SLEUTH_JUDGE_ALLOW_PRIVATE_URLS` lets a customer's
URL point at them where the test is not about addresses, and DNS is faked where it is.
"""

import json

import pytest
from django.db import connection

from corpora.models import Project
from engine import net
from engine.training.config import TrainConfig
from runs import pipeline, stage
from runs.models import Run
from runs.services import JUDGE_FAILED
from tests.helpers.judges_platform import OPERATOR_KEY, PLATFORM_KEY, QUESTION, set_judge, start_run

pytestmark = pytest.mark.django_db

CUSTOMER_KEY = "customer-key-marker-3b7a"


def judge_as_the_worker_does(run: Run) -> None:
    """A run's judge, built as the training and evaluation stages build it, asked once."""
    judge = pipeline.run_judge(run, TrainConfig.from_dict(run.config))
    judge.judge(QUESTION, "$1577.00", "$1,577 million")


# --- keys ------------------------------------------------------------------------------


def test_a_customer_endpoint_never_sees_a_platform_key(
    client_alice, preview, project, servers, operator_judge, local_urls
):
    customer = servers()
    assert set_judge(client_alice, project, customer.base_url).status_code == 302

    assert "<strong>1.00</strong>" in preview(client_alice, project)  # the preview
    judge_as_the_worker_does(start_run(client_alice, project))  # a run's judge

    assert len(customer.requests) == 2
    seen = json.dumps(customer.requests)
    assert PLATFORM_KEY not in seen and OPERATOR_KEY not in seen
    assert operator_judge.requests == []


def test_with_its_own_key_set_the_customer_endpoint_sees_exactly_that_key(
    client_alice, preview, project, servers, operator_judge, local_urls
):
    customer = servers()
    set_judge(client_alice, project, customer.base_url, api_key=CUSTOMER_KEY)

    preview(client_alice, project)
    judge_as_the_worker_does(start_run(client_alice, project))

    assert customer.authorizations() == [f"Bearer {CUSTOMER_KEY}"] * 2


def test_an_operator_judge_is_chosen_by_name_and_gets_the_operators_key(
    client_alice, preview, project, operator_judge
):
    new_run_page = client_alice.get(f"/projects/{project.pk}/runs/new/").content.decode()
    assert 'value="house"' in new_run_page
    assert operator_judge.base_url not in new_run_page

    html = preview(client_alice, project, judge="house")
    run = start_run(client_alice, project, judge="house")
    judge_as_the_worker_does(run)

    assert "<strong>1.00</strong>" in html and operator_judge.base_url not in html
    assert operator_judge.authorizations() == [f"Bearer {OPERATOR_KEY}"] * 2
    stored = run.config["reward"]["judge"]
    assert stored["name"] == "house" and not stored["base_url"] and not stored["model"]


def test_a_judge_url_cannot_be_typed_into_the_run_form(client_alice, project, operator_judge):
    response = client_alice.post(
        f"/projects/{project.pk}/runs/new/",
        {"name": "x", "preset": "quick-cpu", "judge": operator_judge.base_url},
    )
    assert response.status_code == 400
    assert not Run.objects.exists()


def test_the_customer_key_is_never_shown_back_nor_stored_in_plaintext(
    client_alice, project, servers, local_urls
):
    customer = servers()
    set_judge(client_alice, project, customer.base_url, api_key=CUSTOMER_KEY)
    run = start_run(client_alice, project)

    for url in (
        f"/projects/{project.pk}/judge/",
        f"/projects/{project.pk}/runs/new/",
        f"/projects/{project.pk}/",
        f"/runs/{run.pk}/",
        f"/runs/{run.pk}/live/",
    ):
        assert CUSTOMER_KEY not in client_alice.get(url).content.decode(), url
    with connection.cursor() as cursor:
        cursor.execute("SELECT judge_api_key_encrypted FROM corpora_project")
        (stored,) = cursor.fetchone()
    assert stored and CUSTOMER_KEY not in stored
    assert CUSTOMER_KEY not in json.dumps(run.config)
    assert Project.objects.get(pk=project.pk).judge_api_key() == CUSTOMER_KEY


def test_a_new_endpoint_without_a_new_key_forgets_the_old_key(
    client_alice, preview, project, servers, local_urls
):
    first, second = servers(), servers()
    set_judge(client_alice, project, first.base_url, api_key=CUSTOMER_KEY)
    set_judge(client_alice, project, second.base_url)

    preview(client_alice, project)

    assert CUSTOMER_KEY not in json.dumps(second.requests)


def test_a_run_whose_endpoint_was_changed_since_does_not_send_the_new_key_to_the_old_url(
    client_alice, project, servers, local_urls
):
    first, second = servers(), servers()
    set_judge(client_alice, project, first.base_url)
    run = start_run(client_alice, project)
    set_judge(client_alice, project, second.base_url, api_key=CUSTOMER_KEY)

    with pytest.raises(stage.StageFailed, match="not your project's any more"):
        judge_as_the_worker_does(run)
    assert first.requests == [] and second.requests == []


# --- SSRF ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://judge.example.com/v1",
        "https://127.0.0.1/v1",
        "https://10.0.0.5/v1",
        "https://169.254.169.254/latest/meta-data/",
        "https://redis:6379/",
        "https://localhost/v1",
    ],
)
def test_private_and_plain_http_judge_urls_are_refused_with_a_generic_message(
    client_alice, project, url
):
    response = set_judge(client_alice, project, url, api_key=CUSTOMER_KEY)

    html = response.content.decode()
    assert response.status_code == 400
    assert net.REFUSED in html or "Enter a valid URL." in html  # Django's own check, for `redis`
    assert "resolve" not in html and "non-public" not in html
    project.refresh_from_db()
    assert not project.judge_base_url and not project.has_judge_api_key


def test_a_name_that_turns_to_loopback_after_the_checks_is_refused_at_connect_time(
    client_alice, preview, project, servers, monkeypatch
):
    server = servers()
    answers = {"count": 0}

    def resolve(host, port):  # public for the checks, loopback afterwards: DNS rebinding
        answers["count"] += 1
        return ["93.184.216.34"] if answers["count"] <= 2 else ["127.0.0.1"]

    monkeypatch.setattr(net, "resolve", resolve)
    url = f"https://judge.example.com:{server.port}/v1"
    assert set_judge(client_alice, project, url, api_key=CUSTOMER_KEY).status_code == 302

    html = preview(client_alice, project)

    assert JUDGE_FAILED in html
    assert "Connection error" not in html and "127.0.0.1" not in html
    assert server.connections == 0


def test_a_redirect_from_the_customer_endpoint_is_not_followed(
    client_alice, preview, project, servers, local_urls
):
    customer, internal = servers(), servers()
    customer.redirect_to = internal.base_url + "/chat/completions"
    set_judge(client_alice, project, customer.base_url, api_key=CUSTOMER_KEY)

    html = preview(client_alice, project)

    assert customer.requests and internal.requests == []
    assert JUDGE_FAILED in html
    assert str(internal.port) not in html and "302" not in html
