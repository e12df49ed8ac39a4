"""The whole flow of README's "Driving Sleuth from code", from the real `openai` client with a
personal API token against the live server, on the real services and real workers: upload
documents (purpose "user_data") and wait until they are read, upload a question file
(purpose "fine-tune"), start a fine-tuning job on the quick-cpu preset, let a real Celery
worker train, evaluate and publish it, read its events, then chat with
`job.fine_tuned_model` through a real inference worker, whole and streamed.

The job names the preset, as a customer's would; what keeps it small is the operator's side:
the training worker's default model is the tiny 2-layer test model (its SLEUTH_MODEL_CACHE
holds it where the converted SmolLM2 would be, so "default" loads it), and the job asks for
one RL step with groups of two. The run's stages go to queues of this test's own."""

import json
import time
import urllib.request

import pytest
from openai import OpenAI

from corpora.services import project_create
from engine.agent.models import DEFAULT_MODEL
from runs import artifacts
from runs.models import Run
from serving.services import api_token_create
from tests.helpers.serving import worker
from tests.helpers.toy import FACTS, FILLER, tiny_model_folder

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

QUEUES = {
    "SLEUTH_INGEST_QUEUE": "whole-flow-test-ingest",
    "SLEUTH_TRAIN_QUEUE": "whole-flow-test-train",
}
QUESTIONS = (
    "\n".join(
        json.dumps(
            {
                "question": f"what was {entity} {metric} in {year} ?",
                "answer": value,
                "entity": entity,
                "evidence": [{"text": f"{metric} was {value}", "doc": f"{entity}.txt"}],
            }
        )
        for entity, (year, metric, value) in FACTS.items()
    )
    + "\n"
).encode()
QUESTION = "what was acme revenue in 2021 ?"


def wait_for(what: str, check, timeout: float, every: float = 1.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(every)
    raise AssertionError(f"{what} after {timeout:.0f} s")


@pytest.fixture
def training_worker(knob, tmp_path):
    """A real worker on the ingest queue (document parsing) and this test's run queues; its
    default model is the tiny test model."""
    for name, value in QUEUES.items():
        knob(name, value)
    model_cache = tmp_path / "models"
    model_cache.mkdir()
    tiny_model_folder(model_cache)
    (model_cache / "tiny-model").rename(model_cache / DEFAULT_MODEL)
    with worker(
        "test-whole-flow",
        ",".join(["ingest", *QUEUES.values()]),
        "solo",
        tmp_path / "worker.log",
        SLEUTH_MODEL_CACHE=str(model_cache),
    ) as process:
        yield process


def test_documents_questions_a_job_trained_by_a_worker_and_a_chat_with_its_model(
    alice,
    live_server,
    training_worker,
    inference_worker,  # noqa: F811
    tmp_path,
):
    project = project_create(owner=alice, name="Toy filings")
    _, token = api_token_create(user=alice, name="from code")
    client = OpenAI(
        base_url=live_server.url + "/v1", api_key=token, project=str(project.pk), max_retries=0
    )

    documents = [
        client.files.create(
            file=(
                f"{entity}.txt",
                f"{entity} {year} {metric} was {value} .\n\n{FILLER}\n".encode(),
            ),
            purpose="user_data",
        )
        for entity, (year, metric, value) in FACTS.items()
    ]
    assert {d.purpose for d in documents} == {"user_data"}
    for document in documents:
        read = wait_for(
            f"{document.filename} not read",
            lambda d=document: (f := client.files.retrieve(d.id)).status != "uploaded" and f,
            timeout=120,
        )
        assert read.status == "processed", read.status_details
    questions = client.files.create(file=("qa.jsonl", QUESTIONS), purpose="fine-tune")
    assert questions.status == "processed" and questions.purpose == "fine-tune"

    job = client.fine_tuning.jobs.create(
        training_file=questions.id,
        model="quick-cpu",
        hyperparameters={"steps": 1, "group_size": 2},
        suffix="tiny",
    )
    assert job.status == "queued" and job.model == "quick-cpu"
    job = wait_for(
        "the job has not finished",
        lambda: (
            (j := client.fine_tuning.jobs.retrieve(job.id)).status not in ("queued", "running")
            and j
        ),
        timeout=600,
        every=2,
    )
    run = Run.objects.get()
    assert job.status == "succeeded", (job.error, run.status_reason)
    assert job.fine_tuned_model and job.finished_at
    assert run.config["steps"] == 1 and run.config["group_size"] == 2
    published = run.checkpoints.get(is_final=True).published_prefix
    config = artifacts.download_folder(published, tmp_path / "published") / "config.json"
    assert json.loads(config.read_text())["num_hidden_layers"] == 2  # the tiny default

    events = client.fine_tuning.jobs.list_events(job.id, limit=100)
    statuses = [e.data["status"] for e in reversed(events.data) if e.data.get("status")]
    assert statuses == ["queued", "preparing", "training", "evaluating", "publishing", "succeeded"]
    assert all(e.object == "fine_tuning.job.event" and e.message for e in events.data)
    assert [c.is_final for c in client.fine_tuning.jobs.checkpoints.list(job.id)][0]
    assert [m.id for m in client.models.list()] == [job.fine_tuned_model]

    ask = [{"role": "user", "content": QUESTION}]
    reply = client.chat.completions.create(model=job.fine_tuned_model, messages=ask)

    choice = reply.choices[0]
    assert reply.model == job.fine_tuned_model and choice.message.role == "assistant"
    assert choice.finish_reason in ("stop", "length")
    assert reply.usage.completion_tokens > 0
    for call in choice.message.tool_calls or []:
        assert call.function.name == "search" and "query" in json.loads(call.function.arguments)

    chunks = list(
        client.chat.completions.create(model=job.fine_tuned_model, messages=ask, stream=True)
    )

    content = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    calls = [
        call.function.arguments
        for chunk in chunks
        if chunk.choices
        for call in chunk.choices[0].delta.tool_calls or []
    ]
    assert {chunk.model for chunk in chunks} == {job.fine_tuned_model}
    assert content == (choice.message.content or "")  # temperature 0: the same answer
    assert calls == [call.function.arguments for call in choice.message.tool_calls or []]
    assert chunks[-1].choices[0].finish_reason == choice.finish_reason
    # On the wire, the stream ends with OpenAI's sentinel (the client stops at it).
    request = urllib.request.Request(
        live_server.url + "/v1/chat/completions",
        data=json.dumps({"model": job.fine_tuned_model, "messages": ask, "stream": True}).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=180) as response:
        lines = [line for line in response.read().decode().splitlines() if line]
    assert lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2].removeprefix("data: "))["choices"][0]["finish_reason"]
