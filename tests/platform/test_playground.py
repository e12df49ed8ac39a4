"""A succeeded run's playground on the real services: the owner asks its published agent a
question through the pages, polls until a real inference worker has answered, and sees each
search with its hits and the answer; side by side with the echo baseline, the untrained base
model the run started from, or another of their agents; a thumbs-up or a corrected answer
lands in the project's "From the playground" question set. Another customer gets 404
everywhere.

The agent is the tiny model a real run trains and publishes (tests/conftest.py's
`trained_agent`, as for test_api_chat.py); its base model is the same untrained tiny model
(same seed), on the operator's allowlist of this module's inference worker."""

import time

import pytest
from django.http import Http404
from django.urls import reverse

from corpora.models import QuestionSet
from corpora.services import project_create
from runs.models import Run
from serving import chat_slots, inference
from serving import playground as play
from tests.helpers.runs import published_run
from tests.helpers.serving import QUESTION, inference_worker_running, publish_for

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture(scope="module")
def inference_worker(django_db_setup, django_db_blocker, tmp_path_factory, base_model):
    """The suite's inference worker (tests/conftest.py), with the base model on its operator
    allowlist (it checks a base model against it again before loading it)."""
    with inference_worker_running(
        django_db_blocker, tmp_path_factory, SLEUTH_ALLOWED_MODELS=f"default,{base_model}"
    ) as process:
        yield process


def unanswered_run(owner) -> Run:
    """A succeeded run of `owner` with a published agent no worker will answer for (its
    folder does not exist): enough for what happens before an answer comes."""
    project = project_create(owner=owner, name="Filings")
    return published_run(project, owner, index_prefix="indexes/none", slug="filings-first")


def the_run(owner, trained) -> Run:
    name = publish_for(owner, trained)
    return Run.objects.get(project__owner=owner, checkpoints__published_prefix__endswith="/" + name)


@pytest.fixture
def agent_run(alice, request) -> Run:
    """Alice's run publishing the trained agent, with an inference worker to answer it."""
    trained = request.getfixturevalue("trained_agent")
    request.getfixturevalue("inference_worker")
    return the_run(alice, trained)


def poll(client, url: str, seconds: float = 120) -> str:
    """The result fragment, polled as the page does until nothing in it is pending."""
    deadline = time.monotonic() + seconds
    while True:
        response = client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        if "hx-get" not in html or time.monotonic() > deadline:
            return html
        time.sleep(0.5)


def ask(client, run, question=QUESTION, compare="") -> str:
    response = client.post(
        reverse("serving:playground_ask", args=[run.pk]),
        {"question": question, "compare": compare},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200, response.content
    html = response.content.decode()
    assert "hx-get" in html, "a question asked is pending: the fragment polls"
    return html.split('id="ask-', 1)[1].split('"', 1)[0]


# -- before any answer: no worker needed ----------------------------------------------------


def test_another_customer_gets_404_for_the_playground_and_its_questions(alice, bob, client):
    run = unanswered_run(alice)
    client.force_login(alice)
    ask_id = ask(client, run)
    client.force_login(bob)

    urls = [
        reverse("serving:playground", args=[run.pk]),
        reverse("serving:playground_result", args=[run.pk, ask_id]),
    ]
    posts = [
        reverse("serving:playground_ask", args=[run.pk]),
        reverse("serving:playground_feedback", args=[run.pk, ask_id]),
    ]

    assert [client.get(url).status_code for url in urls] == [404, 404]
    assert [
        client.post(
            url, {"question": "q", "column": 0, "helpful": "down", "correction": "x"}
        ).status_code
        for url in posts
    ] == [404, 404]
    assert not QuestionSet.objects.exists()
    with pytest.raises(Http404):
        play.playground_for(user=bob, run_id=run.pk)


def test_a_run_without_a_published_agent_has_no_playground(alice, client):
    run = unanswered_run(alice)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.FAILED)
    client.force_login(alice)

    assert client.get(reverse("serving:playground", args=[run.pk])).status_code == 404
    assert (
        "playground-link"
        not in client.get(reverse("runs:run_detail", args=[run.pk])).content.decode()
    )


def test_the_run_page_links_to_the_playground(alice, client):
    run = unanswered_run(alice)
    client.force_login(alice)

    page = client.get(reverse("runs:run_detail", args=[run.pk])).content.decode()

    assert reverse("serving:playground", args=[run.pk]) in page
    playground = client.get(reverse("serving:playground", args=[run.pk]))
    assert playground.status_code == 200
    assert "filings-first" in playground.content.decode()


def test_questions_are_capped_and_rate_limited_with_the_api(alice, client, settings):
    run = unanswered_run(alice)
    ground = play.playground_for(user=alice, run_id=run.pk)

    with pytest.raises(play.PlaygroundRefused, match="at most 1000"):
        play.playground_ask(user=alice, playground=ground, question="why " * 300)
    settings.SLEUTH_API_RATE_LIMIT = (1, 60)
    client.force_login(alice)
    ask(client, run)
    refused = client.post(reverse("serving:playground_ask", args=[run.pk]), {"question": "Again?"})

    assert refused.status_code == 429
    assert "Too many questions" in refused.content.decode()


def test_feedback_creates_then_extends_the_from_the_playground_set(alice, client):
    run = unanswered_run(alice)
    client.force_login(alice)
    first, second = ask(client, run, "What was ACME's revenue?"), ask(client, run, "Capex?")

    def thumbs_down(ask_id: str, correction: str) -> str:
        url = reverse("serving:playground_feedback", args=[run.pk, ask_id])
        response = client.post(url, {"column": 0, "helpful": "down", "correction": correction})
        assert response.status_code == 200
        return response.content.decode()

    assert "Added to" in thumbs_down(first, "seven million")
    assert "Added to" in thumbs_down(second, "3 dollars")
    again = thumbs_down(first, "eight")
    unanswered = client.post(
        reverse("serving:playground_feedback", args=[run.pk, ask(client, run, "Debt?")]),
        {"column": 0, "helpful": "up"},
    ).content.decode()

    (question_set,) = QuestionSet.objects.filter(project=run.project)
    assert question_set.name == "From the playground"
    assert [(q.question, q.answer) for q in question_set.questions.all()] == [
        ("What was ACME's revenue?", "seven million"),
        ("Capex?", "3 dollars"),
    ]
    assert question_set.size > 0
    assert "Already added, with the answer “seven million”" in again
    assert "no answer to approve" in unanswered


def test_feedback_counts_against_the_storage_quota(alice, settings):
    run = unanswered_run(alice)
    ground = play.playground_for(user=alice, run_id=run.pk)
    ask_id = play.playground_ask(user=alice, playground=ground, question="Revenue?")
    settings.ACCOUNT_QUOTA_BYTES = 10

    with pytest.raises(play.PlaygroundRefused, match="quota"):
        play.playground_feedback(
            user=alice, playground=ground, ask_id=ask_id, column=0, helpful=False, correction="7"
        )
    assert not QuestionSet.objects.exists()


def test_each_search_shows_while_the_agent_is_still_working(alice, client):
    """The inference worker reports each search as task progress (config.tasks.agent_chat);
    a poll shows those made so far, before any answer."""
    from config.celery import app

    run = unanswered_run(alice)
    client.force_login(alice)
    ask_id = ask(client, run)
    ground = play.playground_for(user=alice, run_id=run.pk)
    task_id = play.playground_result(user=alice, playground=ground, ask_id=ask_id)["columns"][0][
        "task_id"
    ]
    search = {
        "query": "[acme 2021] revenue",
        "results": [{"id": "c1", "document": "acme.txt", "page": 2, "text": "revenue was 7"}],
    }
    app.backend.store_result(task_id, {"searches": [search]}, "PROGRESS")

    html = client.get(reverse("serving:playground_result", args=[run.pk, ask_id])).content
    html = html.decode()

    assert "[acme 2021] revenue" in html and "acme.txt" in html and "page 2" in html
    assert "revenue was 7" in html
    assert "hx-get" in html, "still pending: the page keeps polling"
    assert "Searching again or answering" in html


def test_playground_questions_count_against_the_accounts_chat_cap_with_the_api(
    alice, bob, client, settings
):
    """The inference queue is shared by every customer: an account's playground questions
    take the same per-account slots as its /v1 chats (serving.chat_slots), so it cannot
    queue past the cap, and each gives its slot back once a poll finds it ended."""
    settings.SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT = 2
    run = unanswered_run(alice)
    ground = play.playground_for(user=alice, run_id=run.pk)
    first = play.playground_ask(user=alice, playground=ground, question="Revenue?")
    play.playground_ask(user=alice, playground=ground, question="Capex?")
    client.force_login(alice)

    refused = client.post(reverse("serving:playground_ask", args=[run.pk]), {"question": "Debt?"})

    assert refused.status_code == 429
    assert "2 questions and API chats being answered" in refused.content.decode()
    with pytest.raises(chat_slots.ChatsInFlight):  # a /v1 chat of the account waits too
        chat_slots.acquire(alice.pk)
    # They hold no web thread: the site's count, which keeps threads for pages, is untouched.
    assert chat_slots.in_flight(alice.pk) == (2, 0)
    chat_slots.acquire(bob.pk, site=False).release()  # another account is not held up

    settings.SLEUTH_INFERENCE_TIMEOUT = 0.0
    play.playground_result(user=alice, playground=ground, ask_id=first)  # it timed out

    assert chat_slots.in_flight(alice.pk) == (1, 0)
    play.playground_ask(user=alice, playground=ground, question="Debt?")


def test_a_question_nobody_answers_in_time_says_so_and_stops_polling(alice, client, settings):
    run = unanswered_run(alice)
    client.force_login(alice)
    ask_id = ask(client, run)
    settings.SLEUTH_INFERENCE_TIMEOUT = 0.0

    html = client.get(reverse("serving:playground_result", args=[run.pk, ask_id])).content
    html = html.decode()

    assert "No answer within" in html
    assert "hx-get" not in html


def test_the_base_model_is_offered_from_the_operators_allowlist_only(alice, client, settings):
    run = unanswered_run(alice)
    Run.objects.filter(pk=run.pk).update(config={"model": "default"})
    client.force_login(alice)
    page = reverse("serving:playground", args=[run.pk])

    offered = client.get(page).content.decode()
    settings.SLEUTH_ALLOWED_MODELS = ["Qwen/Qwen3-4B-Instruct-2507"]  # the operator dropped it
    withdrawn = client.get(page).content.decode()
    refused = client.post(
        reverse("serving:playground_ask", args=[run.pk]), {"question": "Q?", "compare": "base"}
    ).content.decode()

    assert 'value="base"' in offered and "the base model (SmolLM2-135M), untrained" in offered
    assert 'value="base"' not in withdrawn and "untrained base" not in withdrawn
    assert "Select a valid choice" in refused and "hx-get" not in refused
    with pytest.raises(play.PlaygroundRefused, match="Pick a comparison"):
        play.playground_ask(
            user=alice,
            playground=play.playground_for(user=alice, run_id=run.pk),
            question="Q?",
            compare="base",
        )


def test_a_model_name_or_path_a_customer_types_is_no_comparison(alice, client, monkeypatch):
    run = unanswered_run(alice)
    Run.objects.filter(pk=run.pk).update(config={"model": "default"})
    queued = []
    monkeypatch.setattr(play, "agent_chat_enqueue", lambda *a, **k: queued.append(k))
    client.force_login(alice)

    for typed in ("/tmp/model", "Qwen/Qwen3-4B-Instruct-2507", "default"):
        response = client.post(
            reverse("serving:playground_ask", args=[run.pk]), {"question": "Q?", "compare": typed}
        )
        assert "Select a valid choice" in response.content.decode()
    ground = play.playground_for(user=alice, run_id=run.pk)
    with pytest.raises(play.PlaygroundRefused, match="Pick a comparison"):
        play.playground_ask(user=alice, playground=ground, question="Q?", compare="/tmp/model")

    assert queued == []


def test_the_base_model_is_asked_with_the_runs_model_and_the_agents_settings(
    alice, client, monkeypatch
):
    """The base column queues the run's agent (its published settings and index) with the
    model the run started from in place of its trained weights."""
    run = unanswered_run(alice)
    Run.objects.filter(pk=run.pk).update(config={"model": "default"})
    queued = []

    def enqueue(agent, question, sampling=None, *, base_model=None):
        queued.append((agent, question, base_model))
        return type("Result", (), {"id": f"task-{len(queued)}"})()

    monkeypatch.setattr(play, "agent_chat_enqueue", enqueue)
    ground = play.playground_for(user=alice, run_id=run.pk)

    ask_id = play.playground_ask(user=alice, playground=ground, question="Q?", compare="base")

    entry = play._entry(user=alice, playground=ground, ask_id=ask_id)
    agent_column, base_column = entry["columns"]
    assert queued == [(ground.agent, "Q?", None), (ground.agent, "Q?", "default")]
    assert agent_column["kind"] == "agent" and agent_column["name"] == "filings-first"
    assert base_column["kind"] == "base" and base_column["role"] == "comparison"
    assert base_column["name"] == "base model: SmolLM2-135M, untrained"


def test_the_inference_worker_refuses_a_base_model_off_the_allowlist(settings):
    settings.SLEUTH_ALLOWED_MODELS = ["default"]
    agent = {
        "name": "filings-first",
        "checkpoint_id": 1,
        "published_prefix": "projects/1/runs/1/published/filings-first",
        "index_prefix": "indexes/none",
    }

    for name in ("/etc/passwd-model", "someone/any-hub-model"):
        with pytest.raises(inference.BaseModelRefused):  # before anything downloads
            inference.load_agent({**agent, "base_model": name})


# -- with the trained agent and a real inference worker --------------------------------------


def test_the_agents_searches_and_answer_appear_beside_echo(alice, client, agent_run):
    run = agent_run
    client.force_login(alice)

    ask_id = ask(client, run, compare="echo")
    html = poll(client, reverse("serving:playground_result", args=[run.pk, ask_id]))
    entry = play.playground_result(
        user=alice, playground=play.playground_for(user=alice, run_id=run.pk), ask_id=ask_id
    )

    agent, echo = entry["columns"]
    assert agent["status"] == "done" and agent["answer"] == "seven"
    assert agent["searches"] and "acme" in agent["searches"][0]["query"]
    hit = agent["searches"][0]["results"][0]
    assert hit["document"] == "acme.txt" and hit["text"], "each hit comes with a snippet"
    assert agent["completion_tokens"] > 0 and agent["seconds"] > 0
    assert echo["kind"] == "echo" and echo["status"] == "done"
    assert [s["query"] for s in echo["searches"]] == [QUESTION]
    assert echo["searches"][0]["results"][0]["document"] == "acme.txt"
    assert "seven" in html and "acme.txt" in html and "completion tokens" in html
    assert "Top hit (echo writes no answer)" in html
    # Echo's top hit is no answer to approve; a correction of it is taken.
    ground = play.playground_for(user=alice, run_id=run.pk)
    with pytest.raises(play.PlaygroundRefused, match="no answer to approve"):
        play.playground_feedback(
            user=alice, playground=ground, ask_id=ask_id, column=1, helpful=True
        )
    added = play.playground_feedback(
        user=alice, playground=ground, ask_id=ask_id, column=1, helpful=False, correction="7"
    )
    assert added["answer"] == "7" and added["question_set"].questions.count() == 1


def test_another_agent_side_by_side_and_a_thumbs_up_adds_its_answer(
    alice, client, agent_run, request
):
    run = agent_run
    # A second published agent of hers, in another project.
    publish_for(alice, request.getfixturevalue("trained_agent"))
    ground = play.playground_for(user=alice, run_id=run.pk)
    (other_agent,) = ground.others
    client.force_login(alice)

    ask_id = ask(client, run, compare=other_agent.name)
    poll(client, reverse("serving:playground_result", args=[run.pk, ask_id]))
    entry = play.playground_result(user=alice, playground=ground, ask_id=ask_id)
    up = client.post(
        reverse("serving:playground_feedback", args=[run.pk, ask_id]),
        {"column": 1, "helpful": "up"},
    ).content.decode()

    assert [c["name"] for c in entry["columns"]] == [ground.agent.name, other_agent.name]
    assert [c["answer"] for c in entry["columns"]] == ["seven", "seven"]
    assert "Added to" in up
    (question_set,) = QuestionSet.objects.filter(name="From the playground")
    assert question_set.project == run.project
    assert [(q.question, q.answer) for q in question_set.questions.all()] == [(QUESTION, "seven")]


def test_feedback_sent_twice_at_once_adds_the_question_once(alice):
    run = unanswered_run(alice)
    ground = play.playground_for(user=alice, run_id=run.pk)
    ask_id = play.playground_ask(user=alice, playground=ground, question="Revenue?")
    stale = play._entry(user=alice, playground=ground, ask_id=ask_id)  # a poll's older copy

    play.playground_feedback(
        user=alice, playground=ground, ask_id=ask_id, column=0, helpful=False, correction="7"
    )
    play.cache.set(play._key(ask_id), stale, play.ASK_TTL_SECONDS)  # written back by the poll
    with pytest.raises(play.PlaygroundRefused, match="Already added"):
        play.playground_feedback(
            user=alice, playground=ground, ask_id=ask_id, column=0, helpful=False, correction="8"
        )

    (question_set,) = QuestionSet.objects.filter(project=run.project)
    assert [q.answer for q in question_set.questions.all()] == ["7"]


def test_the_untrained_base_model_answers_beside_the_agent_with_its_settings(
    alice, client, agent_run, base_model, settings
):
    """The run started from the tiny untrained model: the base column is that model, run by
    the inference worker with the agent's published settings (limits: 24 new tokens, one
    result per search) on the agent's index."""
    run = agent_run
    settings.SLEUTH_ALLOWED_MODELS = ["default", base_model]
    Run.objects.filter(pk=run.pk).update(config={"model": base_model})
    client.force_login(alice)

    page = client.get(reverse("serving:playground", args=[run.pk])).content.decode()
    ask_id = ask(client, run, compare="base")
    html = poll(client, reverse("serving:playground_result", args=[run.pk, ask_id]))
    entry = play.playground_result(
        user=alice, playground=play.playground_for(user=alice, run_id=run.pk), ask_id=ask_id
    )

    assert "the base model (tiny-model), untrained" in page
    assert base_model not in page  # the operator's folder is not shown
    agent, base = entry["columns"]
    assert agent["status"] == "done" and agent["answer"] == "seven"
    assert base["status"] == "done", base.get("error")
    assert base["kind"] == "base" and base["name"] == "base model: tiny-model, untrained"
    assert base["answer"] != "seven", "untrained, it has not learned the answer"
    assert 0 < base["completion_tokens"] <= 24  # the agent's limit, not Limits()'s 512
    assert all(len(search["results"]) <= 1 for search in base["searches"])
    assert "base model: tiny-model, untrained" in html
