"""Chats in flight per account and on the whole site (issue 68, item 1): a chat holds a web
thread until its answer, so past SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT (or the site's
SLEUTH_CHATS_IN_FLIGHT) a chat is refused at once with a 429, not queued.

The chats go to the live server over HTTP, as a customer's client sends them, and really
are queued on the real broker, on a queue of the test's own that no worker reads: the test
plays the inference worker at the Celery boundary, writing each answer (or failure) into the
real result backend when it chooses, so a chat is "slow" for as long as the test likes."""

import json
import threading
import time
import urllib.error
import urllib.request
import uuid

import pytest
import redis
from celery import states
from django.test import Client
from django.utils import timezone

from core import leases
from corpora.services import project_create
from runs.models import Checkpoint, Run
from serving import chat_slots
from serving.services import api_token_create

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER = {
    "answer": "seven",
    "searches": [{"query": "acme revenue 2021", "results": []}],
    "prompt_tokens": 10,
    "completion_tokens": 2,
    "finish_reason": "answer",
    "cache": "hit",
    "seconds": 0.1,
}


class InferenceQueue:
    """The test's inference queue on the real broker; the test answers what is queued."""

    def __init__(self, name: str, broker_url: str):
        self.name = name
        self.broker = redis.Redis.from_url(broker_url)

    def queued(self) -> list[str]:
        """The ids of the chat tasks queued so far (oldest first), left on the queue."""
        raw = self.broker.lrange(self.name, 0, -1)
        return [json.loads(m)["headers"]["id"] for m in reversed(raw)]

    def wait_for(self, count: int, timeout: float = 30) -> list[str]:
        deadline = time.monotonic() + timeout
        while len(ids := self.queued()) < count:
            assert time.monotonic() < deadline, f"{len(ids)} chats queued, expected {count}"
            time.sleep(0.05)
        return ids

    def answer(self, task_id: str) -> None:
        from config.celery import app

        app.backend.store_result(task_id, ANSWER, states.SUCCESS)

    def fail(self, task_id: str) -> None:
        from config.celery import app

        app.backend.mark_as_failure(task_id, RuntimeError("the agent broke"), traceback="tb")


@pytest.fixture
def inference(settings):
    queue = InferenceQueue(f"test-chats-{uuid.uuid4().hex}", settings.CELERY_BROKER_URL)
    settings.SLEUTH_INFERENCE_QUEUE = queue.name
    settings.SLEUTH_INFERENCE_TIMEOUT = 30.0  # a chat the test forgets ends within the test
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT = 2
    settings.SLEUTH_CHATS_IN_FLIGHT = 10
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS = 10  # the live server is one process
    yield queue
    for task_id in queue.queued():  # no server thread left waiting on an answer
        queue.answer(task_id)
    queue.broker.delete(queue.name)


def published_agent(owner) -> str:
    """`owner`'s published agent (its folders are never read: no worker picks the chats)."""
    project = project_create(owner=owner, name="Toy filings")
    run = Run.objects.create(
        project=project,
        created_by=owner,
        name="tiny",
        status=Run.Status.SUCCEEDED,
        index_prefix=f"indexes/{uuid.uuid4().hex}",
        finished_at=timezone.now(),
    )
    name = f"toy-filings-tiny-{owner.pk}"
    Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=f"published/{name}/unused",
        is_final=True,
        published_prefix=f"published/{name}",
    )
    return name


class Customer:
    def __init__(self, user, base_url: str):
        self.user, self.base_url = user, base_url
        self.model = published_agent(user)
        _, self.token = api_token_create(user=user, name="tests")

    def chat(self, stream: bool = False, timeout: float = 60) -> dict:
        """One chat over HTTP: its status, headers, body (a stream's events joined) and
        how long it took."""
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": "what was acme revenue in 2021 ?"}],
            "stream": stream,
        }
        request = urllib.request.Request(
            self.base_url + "/v1/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        started = time.monotonic()
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                status, headers, text = response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as refused:
            status, headers, text = refused.code, dict(refused.headers), refused.read()
        return {
            "status": status,
            "headers": {k.lower(): v for k, v in headers.items()},
            "text": text.decode(),
            "seconds": time.monotonic() - started,
        }

    def chat_in_background(self, stream: bool = False) -> "Background":
        return Background(lambda: self.chat(stream=stream))


class Background(threading.Thread):
    def __init__(self, call):
        super().__init__(daemon=True)
        self.call, self.result = call, None
        self.start()

    def run(self):
        self.result = self.call()

    def outcome(self, timeout: float = 60) -> dict:
        self.join(timeout)
        assert self.result is not None, "the chat did not end"
        return self.result


@pytest.fixture
def customer(live_server, django_user_model):
    def make(email: str) -> Customer:
        user = django_user_model.objects.create_user(email=email, password="pw-x-1")
        return Customer(user, live_server.url)

    return make


def refused_at_once(outcome: dict, in_flight: int, cap: int) -> dict:
    assert outcome["status"] == 429, outcome
    error = json.loads(outcome["text"])["error"]
    assert error["code"] == "too_many_chats_in_flight"
    assert error["type"] == "rate_limit_error"
    assert f"{in_flight} chats" in error["message"] and f"({cap})" in error["message"]
    assert int(outcome["headers"]["retry-after"]) > 0
    assert outcome["seconds"] < 5, "refused at once, not after waiting for a slot"
    return error


def test_past_the_accounts_cap_a_chat_is_refused_at_once_and_queues_nothing(inference, customer):
    alice = customer("alice@example.com")
    held = [alice.chat_in_background(), alice.chat_in_background(stream=True)]
    ids = inference.wait_for(2)

    refused = alice.chat()
    refused_stream = alice.chat(stream=True)

    error = refused_at_once(refused, in_flight=2, cap=2)
    assert "Your account" in error["message"]
    refused_at_once(refused_stream, in_flight=2, cap=2)
    assert inference.queued() == ids, "the refused chats were not queued for a worker"
    assert chat_slots.in_flight(alice.user.pk) == (2, 2)
    for task_id in ids:
        inference.answer(task_id)
    assert [c.outcome()["status"] for c in held] == [200, 200]
    assert chat_slots.in_flight(alice.user.pk) == (0, 0)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("ending", ["answer", "error", "timeout"])
def test_a_chat_gives_its_slot_back_when_it_ends(inference, customer, settings, stream, ending):
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT = 1
    if ending == "timeout":
        settings.SLEUTH_INFERENCE_TIMEOUT = 1.0
    alice = customer("alice@example.com")
    first = alice.chat_in_background(stream=stream)
    (task_id,) = inference.wait_for(1)
    assert alice.chat()["status"] == 429  # the slot is taken meanwhile

    if ending == "answer":
        inference.answer(task_id)
    elif ending == "error":
        inference.fail(task_id)
    outcome = first.outcome()

    expected = {"answer": 200, "error": 500, "timeout": 504}[ending]
    if stream:  # a stream has begun with 200 before it ends, in an error event or not
        assert outcome["status"] == 200
        assert ('"error"' in outcome["text"]) == (ending != "answer"), outcome["text"]
        assert outcome["text"].rstrip().endswith("data: [DONE]")
    else:
        assert outcome["status"] == expected, outcome
    assert chat_slots.in_flight(alice.user.pk) == (0, 0)
    settings.SLEUTH_INFERENCE_TIMEOUT = 30.0
    second = alice.chat_in_background()
    (_, again) = inference.wait_for(2)
    inference.answer(again)
    assert second.outcome()["status"] == 200


def test_another_accounts_chats_are_not_held_up_by_the_first_ones(inference, customer):
    alice, bob = customer("alice@example.com"), customer("bob@example.com")
    held = [alice.chat_in_background(), alice.chat_in_background()]
    ids = inference.wait_for(2)
    assert alice.chat()["status"] == 429

    bobs = bob.chat_in_background()
    ids = inference.wait_for(3)
    inference.answer(ids[2])

    answer = bobs.outcome()
    assert answer["status"] == 200
    assert json.loads(answer["text"])["choices"][0]["message"]["content"] == "seven"
    for task_id in ids[:2]:
        inference.answer(task_id)
    assert [c.outcome()["status"] for c in held] == [200, 200]


def test_the_sites_cap_holds_across_accounts(inference, customer, settings):
    settings.SLEUTH_CHATS_IN_FLIGHT = 3
    alice, bob, carol = (customer(f"{n}@example.com") for n in ("alice", "bob", "carol"))
    held = [alice.chat_in_background(), alice.chat_in_background(), bob.chat_in_background()]
    ids = inference.wait_for(3)

    for refused in (bob.chat(), carol.chat(stream=True)):
        error = refused_at_once(refused, in_flight=3, cap=3)
        assert "Your account" not in error["message"]  # the site's cap, not theirs
    assert len(inference.queued()) == 3
    inference.answer(ids[0])  # whichever of the three chats it was: the site has a slot again
    deadline = time.monotonic() + 30
    while chat_slots.in_flight(carol.user.pk) != (0, 2):
        assert time.monotonic() < deadline, "the answered chat kept its slot"
        time.sleep(0.05)
    carols = carol.chat_in_background()
    ids = inference.wait_for(4)
    for task_id in ids[1:]:
        inference.answer(task_id)
    assert [c.outcome()["status"] for c in [*held, carols]] == [200] * 4


def test_one_web_process_keeps_a_thread_for_pages_whatever_the_sites_count(
    inference, customer, settings
):
    # The site's count is shared by every web process: with room left in it, one process
    # must still not give all of its threads to chats (the live server is one process).
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS = 2
    alice, bob = customer("alice@example.com"), customer("bob@example.com")
    held = [alice.chat_in_background(), bob.chat_in_background(stream=True)]
    ids = inference.wait_for(2)

    error = refused_at_once(bob.chat(), in_flight=2, cap=2)
    assert "This server" in error["message"] and "Your account" not in error["message"]
    assert len(inference.queued()) == 2, "the refused chat was not queued"
    assert chat_slots.in_flight(bob.user.pk) == (1, 2)  # the site's count had room
    inference.answer(ids[0])  # whichever of the two it was: the process has a turn again
    deadline = time.monotonic() + 30
    while chat_slots._process_turns.taken != 1:
        assert time.monotonic() < deadline, "the answered chat kept its turn"
        time.sleep(0.05)
    again = bob.chat_in_background()
    ids = inference.wait_for(3)
    for task_id in ids[1:]:
        inference.answer(task_id)
    assert [c.outcome()["status"] for c in [*held, again]] == [200] * 3
    assert chat_slots._process_turns.taken == 0


def test_with_the_cache_down_a_process_still_keeps_a_thread_for_pages(settings, monkeypatch):
    from django.core.cache.backends.redis import RedisCache

    monkeypatch.setattr(leases, "cache", RedisCache("redis://127.0.0.1:9/0", {}))
    monkeypatch.setattr(chat_slots, "_process_turns", chat_slots._ProcessTurns())
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS = 1
    held = chat_slots.acquire(1)  # not counted in the cache, counted here
    with pytest.raises(chat_slots.ChatsInFlight) as full:
        chat_slots.acquire(2)
    assert full.value.full == "process"
    held.release()
    held.release()  # twice: nothing more given back
    chat_slots.acquire(2).release()
    chat_slots.acquire(3, site=False).release()  # the playground's hold no thread
    assert chat_slots._process_turns.taken == 0


def test_a_stream_the_server_closes_unread_gives_its_slot_back(inference, django_user_model):
    # A client gone before the stream began: the server closes the response unread, and a
    # generator that never started would run no `finally`.
    alice = django_user_model.objects.create_user(email="alice@example.com", password="x")
    model = published_agent(alice)
    _, token = api_token_create(user=alice, name="tests")
    response = Client().post(
        "/v1/chat/completions",
        {"model": model, "messages": [{"role": "user", "content": "acme ?"}], "stream": True},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 200 and response.streaming
    assert chat_slots.in_flight(alice.pk) == (1, 1)

    response.close()

    assert chat_slots.in_flight(alice.pk) == (0, 0)


def test_a_lease_a_crashed_request_left_runs_out_by_itself(settings, monkeypatch, db):
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT = 1
    settings.SLEUTH_INFERENCE_TIMEOUT = 0.5
    monkeypatch.setattr(chat_slots, "LEASE_MARGIN_SECONDS", 0.0)
    # A dead process's own count of its threads dies with it; the test's process goes on.
    monkeypatch.setattr(chat_slots, "_process_turns", chat_slots._ProcessTurns())
    chat_slots.acquire(42)  # never released: its process died
    with pytest.raises(chat_slots.ChatsInFlight):
        chat_slots.acquire(42)

    time.sleep(0.7)

    chat_slots.acquire(42).release()
    assert chat_slots.in_flight(42) == (0, 0)


def test_with_the_cache_down_chats_are_let_through_and_it_is_logged(
    inference, customer, monkeypatch, caplog
):
    from django.core.cache.backends.redis import RedisCache

    # A port nothing listens on: every cache call fails as it does with Redis down.
    monkeypatch.setattr(leases, "cache", RedisCache("redis://127.0.0.1:9/0", {}))
    alice = customer("alice@example.com")
    chats = [alice.chat_in_background() for _ in range(3)]  # past the cap of 2

    ids = inference.wait_for(3)
    for task_id in ids:
        inference.answer(task_id)

    assert [c.outcome()["status"] for c in chats] == [200, 200, 200]
    assert "chat slots not counted: the cache is unreachable" in caplog.text


def test_the_defaults_leave_the_images_web_threads_room_for_pages():
    from config.settings import base

    web_threads = 2 * 4  # docker/Dockerfile: --workers 2 --threads 4
    assert base.SLEUTH_CHATS_IN_FLIGHT < web_threads
    assert base.SLEUTH_CHATS_IN_FLIGHT_PER_PROCESS < 4
    assert base.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT <= base.SLEUTH_CHATS_IN_FLIGHT
