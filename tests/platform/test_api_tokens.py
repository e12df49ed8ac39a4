"""Personal API tokens and who sees what at /v1: tokens are shown once and stored hashed,
work until revoked, and a token only ever reaches its owner's published agents."""

import hashlib

import pytest
from django.utils import timezone

from corpora.models import Project
from corpora.services import project_create
from runs.models import Checkpoint, Run
from serving.models import ApiToken
from serving.services import api_token_create, api_token_revoke

pytestmark = pytest.mark.django_db


def publish(owner, project_name: str, run_name: str) -> Checkpoint:
    """A succeeded run with a published final checkpoint, as run_publish leaves it."""
    project = project_create(owner=owner, name=project_name)
    run = Run.objects.create(
        project=project, created_by=owner, name=run_name, status=Run.Status.SUCCEEDED
    )
    slug = f"{project_name}-{run_name}".lower().replace(" ", "-")
    return Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=f"projects/{project.pk}/runs/{run.pk}/a/checkpoints/1",
        is_final=True,
        published_prefix=f"projects/{project.pk}/runs/{run.pk}/a/published/{slug}",
    )


def bearer(raw: str) -> dict:
    return {"HTTP_AUTHORIZATION": f"Bearer {raw}"}


def test_a_token_is_stored_as_its_sha256_with_only_a_short_prefix_visible(alice):
    token, raw = api_token_create(user=alice, name="laptop")

    stored = ApiToken.objects.values().get(pk=token.pk)
    assert raw.startswith("sk-sleuth-") and len(raw) > 40
    assert stored["digest"] == hashlib.sha256(raw.encode()).hexdigest()
    assert raw not in str(stored)
    assert raw.startswith(stored["prefix"]) and len(stored["prefix"]) < len(raw) // 2


def test_models_without_a_token_is_401_in_openai_error_shape(client):
    response = client.get("/v1/models")

    assert response.status_code == 401
    assert response.json()["error"]["code"] == "invalid_api_key"


def test_an_unknown_token_is_401(client):
    response = client.get("/v1/models", **bearer("sk-sleuth-not-a-real-token"))

    assert response.status_code == 401


def test_a_revoked_token_is_401(client, alice):
    token, raw = api_token_create(user=alice, name="laptop")
    assert client.get("/v1/models", **bearer(raw)).status_code == 200

    api_token_revoke(user=alice, token_id=token.pk)

    assert client.get("/v1/models", **bearer(raw)).status_code == 401


def test_models_lists_the_callers_published_agents_and_never_another_customers(client, alice, bob):
    publish(alice, "Filings", "First agent")
    publish(bob, "Bob docs", "Secret agent")
    _, raw = api_token_create(user=alice, name="laptop")

    response = client.get("/v1/models", **bearer(raw))

    assert response.status_code == 200
    assert [m["id"] for m in response.json()["data"]] == ["filings-first-agent"]
    assert response.json()["data"][0]["object"] == "model"


def test_a_run_that_was_not_published_is_not_a_model(client, alice):
    checkpoint = publish(alice, "Filings", "First agent")
    Run.objects.filter(pk=checkpoint.run_id).update(status=Run.Status.FAILED)
    _, raw = api_token_create(user=alice, name="laptop")

    assert client.get("/v1/models", **bearer(raw)).json()["data"] == []


def test_two_agents_of_one_name_are_both_reachable(client, alice):
    older = publish(alice, "Filings", "Agent")
    newer = publish(alice, "Filings", "Agent")
    Run.objects.filter(pk=older.run_id).update(finished_at="2024-01-01T00:00Z")
    Run.objects.filter(pk=newer.run_id).update(finished_at="2025-01-01T00:00Z")
    _, raw = api_token_create(user=alice, name="laptop")

    ids = [m["id"] for m in client.get("/v1/models", **bearer(raw)).json()["data"]]

    assert ids == ["filings-agent", f"filings-agent-run{older.run_id}"]


def test_chat_with_another_customers_agent_name_is_404(client, alice, bob):
    publish(bob, "Bob docs", "Secret agent")
    _, raw = api_token_create(user=alice, name="laptop")

    response = client.post(
        "/v1/chat/completions",
        {"model": "bob-docs-secret-agent", "messages": [{"role": "user", "content": "hi"}]},
        content_type="application/json",
        **bearer(raw),
    )

    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"


def test_chat_without_a_user_message_is_400(client, alice):
    publish(alice, "Filings", "First agent")
    _, raw = api_token_create(user=alice, name="laptop")

    response = client.post(
        "/v1/chat/completions",
        {"model": "filings-first-agent", "messages": [{"role": "system", "content": "hi"}]},
        content_type="application/json",
        **bearer(raw),
    )

    assert response.status_code == 400
    assert "user message" in response.json()["error"]["message"]


def test_using_a_token_records_when_it_was_last_used(client, alice):
    token, raw = api_token_create(user=alice, name="laptop")
    assert token.last_used_at is None

    client.get("/v1/models", **bearer(raw))

    token.refresh_from_db()
    assert token.last_used_at is not None


def test_requests_past_the_rate_limit_are_429_with_retry_after(client, alice, settings):
    settings.SLEUTH_API_RATE_LIMIT = (2, 60)
    _, raw = api_token_create(user=alice, name="laptop")

    statuses = [client.get("/v1/models", **bearer(raw)).status_code for _ in range(3)]
    response = client.get("/v1/models", **bearer(raw))

    assert statuses == [200, 200, 429]
    assert response["Retry-After"] == "60"
    assert response.json()["error"]["code"] == "rate_limit_exceeded"


def test_many_invalid_tokens_from_one_address_are_429(client, settings):
    settings.SLEUTH_API_AUTH_FAILURE_LIMIT = (3, 600)

    statuses = [
        client.get("/v1/models", **bearer(f"sk-sleuth-guess-{i}")).status_code for i in range(4)
    ]

    assert statuses == [401, 401, 401, 429]


def test_the_tokens_page_shows_a_new_token_once(client, alice):
    client.force_login(alice)

    created = client.post(
        "/account/api-tokens/",
        {
            "name": "laptop",
            "scopes": ["read", "chat"],
            "expires_in_days": "30",
            "password": "pw-alice-1",
        },
    ).content.decode()
    raw = created.split('id="new-token" type="text" readonly value="')[1].split('"')[0]
    again = client.get("/account/api-tokens/").content.decode()

    assert raw.startswith("sk-sleuth-")
    assert raw not in again and "laptop" in again
    assert ApiToken.objects.get(user=alice).prefix in again


def test_revoking_another_customers_token_is_404_and_leaves_it_working(client, alice, bob):
    token, raw = api_token_create(user=bob, name="bob's")
    client.force_login(alice)

    response = client.post(f"/account/api-tokens/{token.pk}/revoke/")

    assert response.status_code == 404
    assert client.get("/v1/models", **bearer(raw)).status_code == 200


def test_the_openapi_schema_is_served(client):
    response = client.get("/v1/openapi.json")

    assert response.status_code == 200
    assert "/v1/chat/completions" in response.json()["paths"]


# -- scopes, expiry, re-authentication, revocation with the password ------------------------


def mint(client, **fields):
    data = {"name": "ci", "scopes": ["read"], "expires_in_days": "90", "password": "pw-alice-1"}
    return client.post("/account/api-tokens/", data | fields)


def test_minting_a_token_needs_the_account_s_password(client, alice):
    client.force_login(alice)

    refused = mint(client, password="guess")

    assert refused.status_code == 400 and "not your password" in refused.content.decode()
    assert not ApiToken.objects.exists()
    assert mint(client).status_code == 200
    token = ApiToken.objects.get(user=alice)
    assert token.scope_list == ["read"]
    assert 89 <= (token.expires_at - token.created_at).days <= 90


def test_a_token_with_no_scope_is_refused(client, alice):
    client.force_login(alice)

    refused = mint(client, scopes=[])

    assert refused.status_code == 400 and "at least one" in refused.content.decode()
    assert not ApiToken.objects.exists()


def test_a_read_token_reads_but_cannot_write_delete_or_chat(client, alice):
    project = project_create(owner=alice, name="Acme")
    _token, raw = api_token_create(user=alice, name="ro", scopes=["read"])

    assert client.get("/v1/models", **bearer(raw)).status_code == 200
    assert client.get(f"/v1/projects/{project.pk}", **bearer(raw)).status_code == 200
    deleted = client.delete(f"/v1/projects/{project.pk}", **bearer(raw))
    chat = client.post(
        "/v1/chat/completions",
        {"model": "x", "messages": [{"role": "user", "content": "hi"}]},
        content_type="application/json",
        **bearer(raw),
    )

    assert deleted.status_code == 403 and chat.status_code == 403
    error = deleted.json()["error"]
    assert error["code"] == "insufficient_scope" and "train scope" in error["message"]
    assert Project.objects.filter(pk=project.pk).exists()


def test_a_chat_token_lists_the_agents_and_asks_them_but_reads_nothing_else(client, alice):
    project = project_create(owner=alice, name="Acme")
    _token, raw = api_token_create(user=alice, name="bot", scopes=["chat"])

    assert client.get("/v1/models", **bearer(raw)).status_code == 200
    assert client.get(f"/v1/projects/{project.pk}", **bearer(raw)).status_code == 403
    chat = client.post(
        "/v1/chat/completions",
        {"model": "no-such-agent", "messages": [{"role": "user", "content": "hi"}]},
        content_type="application/json",
        **bearer(raw),
    )
    assert chat.status_code == 404  # past the scope check: no such agent


def test_an_expired_token_no_longer_works(client, alice):
    token, raw = api_token_create(user=alice, name="old", expires_in_days=30)
    assert client.get("/v1/models", **bearer(raw)).status_code == 200

    ApiToken.objects.filter(pk=token.pk).update(expires_at=timezone.now())

    assert client.get("/v1/models", **bearer(raw)).status_code == 401
    client.force_login(alice)
    assert "expired" in client.get("/account/api-tokens/").content.decode()


def test_a_new_password_revokes_every_token(client, alice, bob):
    _mine, raw = api_token_create(user=alice, name="ci")
    _theirs, bobs = api_token_create(user=bob, name="bob's")
    # As the reset page and the admin both do: set_password, then save.
    alice.set_password("a-brand-new-passphrase-7")
    alice.save()

    alice.refresh_from_db()
    assert alice.check_password("a-brand-new-passphrase-7")
    assert client.get("/v1/models", **bearer(raw)).status_code == 401
    assert client.get("/v1/models", **bearer(bobs)).status_code == 200  # no one else's


def test_minting_is_rate_limited_per_account(client, alice, settings):
    settings.SLEUTH_TOKEN_MINT_RATE_LIMIT = (2, 3600)
    client.force_login(alice)

    answers = [mint(client, name=f"t{i}").status_code for i in range(3)]

    assert answers == [200, 200, 429]
    assert ApiToken.objects.filter(user=alice).count() == 2
