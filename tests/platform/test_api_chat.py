"""The OpenAI-compatible API end to end on the real services: the real `openai` client,
pointed at the live server with a personal API token, lists a published agent and gets
answers from it. A tiny model is trained and published once, by a real run on a real
Celery worker (a scripted-teacher cold start teaches it to search the toy corpus); a real
inference worker (the "inference" queue, as `make run` starts it) keeps it loaded (both
tests/conftest.py's fixtures: `trained_agent`, once per session, and `inference_worker`).

The database is emptied after every test, the objects on S3 are not: each test publishes
the session's trained agent again for its own alice (new rows over the same S3 folders)."""

import json
import urllib.error
import urllib.request

import openai
import pytest
from openai import OpenAI

from serving.services import api_token_create, api_token_revoke
from tests.helpers.serving import QUESTION, publish_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def agent(alice, trained_agent, inference_worker) -> str:
    return publish_for(alice, trained_agent)


@pytest.fixture
def client_for(live_server):
    def make(user) -> OpenAI:
        _, token = api_token_create(user=user, name="tests")
        return OpenAI(base_url=live_server.url + "/v1", api_key=token, max_retries=0)

    return make


def ask(client: OpenAI, model: str, **options):
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": QUESTION}], **options
    )


def test_the_openai_client_lists_the_published_agent(agent, alice, client_for):
    models = client_for(alice).models.list()

    assert [m.id for m in models] == [agent]
    assert models.data[0].owned_by == "Toy filings"


def test_the_openai_client_gets_the_agents_answer_with_its_searches_as_tool_calls(
    agent, alice, client_for
):
    completion = ask(client_for(alice), agent)

    message = completion.choices[0].message
    assert completion.model == agent and message.role == "assistant"
    assert message.tool_calls, "the trained agent searches before it answers"
    call = message.tool_calls[0]
    assert call.type == "function" and call.function.name == "search"
    assert "acme" in json.loads(call.function.arguments)["query"]
    assert completion.choices[0].finish_reason == "stop"
    assert message.content == "seven"
    assert completion.usage.completion_tokens > 0
    found = completion.sleuth["searches"][0]["results"]
    assert found and found[0]["document"] == "acme.txt"


def test_a_streamed_answer_brings_the_same_searches_and_answer_in_chunks(agent, alice, client_for):
    client = client_for(alice)
    whole = ask(client, agent)

    chunks = list(ask(client, agent, stream=True))

    streamed_calls = [
        call.function.arguments
        for chunk in chunks
        for call in (chunk.choices[0].delta.tool_calls or [])
    ]
    content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks)
    assert streamed_calls == [c.function.arguments for c in whole.choices[0].message.tool_calls]
    assert content == whole.choices[0].message.content
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_agent_is_loaded_once_across_two_requests(agent, alice, client_for):
    client = client_for(alice)

    first = client.chat.completions.with_raw_response.create(
        model=agent, messages=[{"role": "user", "content": QUESTION}]
    )
    second = client.chat.completions.with_raw_response.create(
        model=agent, messages=[{"role": "user", "content": "what was globex dividend ?"}]
    )

    assert first.headers["x-sleuth-agent-cache"] == "miss"
    assert second.headers["x-sleuth-agent-cache"] == "hit"


def test_without_a_token_the_api_answers_401(agent, live_server):
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(live_server.url + "/v1/models")

    assert refused.value.code == 401


def test_a_revoked_token_gets_401_from_the_openai_client(agent, alice, live_server):
    token, raw = api_token_create(user=alice, name="old laptop")
    client = OpenAI(base_url=live_server.url + "/v1", api_key=raw, max_retries=0)
    api_token_revoke(user=alice, token_id=token.pk)

    with pytest.raises(openai.AuthenticationError):
        client.models.list()
    with pytest.raises(openai.AuthenticationError):
        ask(client, agent)


def test_another_customers_agent_name_is_404_for_the_openai_client(agent, bob, client_for):
    with pytest.raises(openai.NotFoundError):
        ask(client_for(bob), agent)


@pytest.mark.parametrize(
    "sampling",
    [
        {"temperature": 3.0},
        {"seed": 2**80},
        {"seed": -1},
        {"max_tokens": 0},
        {"max_completion_tokens": 2**80},
    ],
    ids=["hot", "huge-seed", "negative-seed", "no-tokens", "huge-tokens"],
)
def test_sampling_a_sampler_cannot_honour_is_a_400_naming_the_field(
    agent, alice, client_for, sampling
):
    with pytest.raises(openai.BadRequestError) as refused:
        client_for(alice).chat.completions.create(
            model=agent, messages=[{"role": "user", "content": QUESTION}], **sampling
        )

    assert next(iter(sampling)) in str(refused.value)


def test_a_temperature_of_nan_is_a_400(agent, alice, live_server):
    # The openai client refuses to send NaN; any other client may (JSON parsers take it).
    _, token = api_token_create(user=alice, name="raw")
    body = '{"model": "%s", "messages": [{"role": "user", "content": "%s"}], "temperature": NaN}'
    request = urllib.request.Request(
        live_server.url + "/v1/chat/completions",
        data=(body % (agent, QUESTION)).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)

    assert refused.value.code == 400
    assert "temperature" in json.loads(refused.value.read())["error"]["message"]


def test_a_question_longer_than_the_agent_reads_is_a_400_that_says_the_limit(
    agent, alice, client_for
):
    from serving.services import QUESTION_MAX_CHARS

    too_long = "what was acme revenue ? " * (QUESTION_MAX_CHARS // 20)
    with pytest.raises(openai.BadRequestError) as refused:
        client_for(alice).chat.completions.create(
            model=agent, messages=[{"role": "user", "content": too_long}]
        )

    assert f"at most {QUESTION_MAX_CHARS}" in str(refused.value)
