"""The reward preview is a Celery task with a deadline (issue 14.3): the form's request only
queues it and answers with a pending fragment that htmx polls; the task gives every judge
call together a total deadline; a preview no worker starts ends with a clear message; a
preview is its owner's only.

Judges are local HTTP servers; a customer's URL may point at them here
(`SLEUTH_JUDGE_ALLOW_PRIVATE_URLS`). Where a test needs its own settings to apply, the
preview goes to a queue no worker serves and the test runs the task's service itself
(`preview_here`); one test goes through the real worker.
"""

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from corpora.services import project_create
from runs import services

pytestmark = pytest.mark.django_db

FORM = {
    "preset": "quick-cpu",
    "question_text": "What was 3M's FY2018 capital expenditure?",
    "ground_truth": "$1577.00",
    "sample_answers": "$1,577 million",
    "searched": "on",
    "found_golden": "on",
}
VERDICT = {"correct": True, "score": 1.0, "reason": "same amount"}


class HeldJudge:
    """An OpenAI-compatible judge that holds every request until `release()` (or 60 s),
    then answers "correct": a judge too slow for any deadline."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.requests = 0
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                judge.requests += 1
                judge.released.wait(60)
                message = {"role": "assistant", "content": json.dumps(VERDICT)}
                body = json.dumps({"choices": [{"index": 0, "message": message}]}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the client gave up at its deadline

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.release()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def held_judge(settings):
    settings.SLEUTH_JUDGE_ALLOW_PRIVATE_URLS = True
    judge = HeldJudge()
    yield judge
    judge.close()


def use_judge(client, project, base_url: str) -> None:
    data = {"base_url": base_url, "model": "their-model", "api_key": ""}
    assert client.post(f"/projects/{project.pk}/judge/", data).status_code == 302


def poll_url(html: str) -> str:
    match = re.search(r'hx-get="(/projects/\d+/runs/reward-preview/[\w-]+/)"', html)
    assert match, f"no polling fragment in {html[:1000]}"
    return match.group(1)


def preview_id(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[1]


def test_the_preview_request_answers_pending_without_waiting_on_the_judge(
    client_alice, project, held_judge, knob
):
    knob("SLEUTH_PREVIEW_QUEUE", "previews-scored-by-the-test")
    use_judge(client_alice, project, held_judge.base_url)

    response = client_alice.post(
        f"/projects/{project.pk}/runs/reward-preview/", {**FORM, "judge": "own"}
    )

    html = response.content.decode()
    assert response.status_code == 200
    assert "Scoring your sample answers" in html and 'hx-trigger="load delay:1s"' in html
    assert held_judge.requests == 0  # the judge was not asked in the request
    assert "reward-preview-table" not in html


@pytest.mark.django_db(transaction=True)  # the worker reads the project on its connection
def test_the_pending_preview_polls_until_a_real_worker_has_scored_it(
    client_alice, project, celery_worker
):
    posted = client_alice.post(f"/projects/{project.pk}/runs/reward-preview/", FORM)
    url = poll_url(posted.content.decode())

    html = ""
    for _ in range(120):
        html = client_alice.get(url).content.decode()
        if "Scoring your sample answers" not in html:
            break
        time.sleep(0.5)

    assert "reward-preview-table" in html, html[:2000]
    assert "$1,577 million" in html and "<strong>1.00</strong>" in html
    assert "hx-get" not in html  # done: the fragment stops polling


def test_the_preview_task_stops_a_slow_judge_at_its_deadline(
    client_alice, project, held_judge, preview_here, knob
):
    knob("SLEUTH_PREVIEW_SECONDS", 1.0)
    use_judge(client_alice, project, held_judge.base_url)

    html = preview_here(client_alice, project, {**FORM, "judge": "own"})

    assert "did not answer within the preview&#x27;s 1 seconds" in html
    assert "<strong>1.00</strong>" not in html  # the judge's late "correct" never counted
    assert held_judge.requests >= 1


def test_a_preview_no_worker_starts_ends_with_a_timeout_message(
    client_alice, project, monkeypatch, knob
):
    knob("SLEUTH_PREVIEW_QUEUE", "a-queue-no-worker-serves")
    posted = client_alice.post(f"/projects/{project.pk}/runs/reward-preview/", FORM)
    url = poll_url(posted.content.decode())
    monkeypatch.setattr(services, "PREVIEW_PICKUP_SECONDS", 0)  # its pick-up time is past

    html = client_alice.get(url).content.decode()

    assert "The preview did not finish in time" in html and "hx-get" not in html
    # A worker that gets the task after the page gave up does not score it.
    assert services.reward_preview_run(preview_id=preview_id(url)) is None


def test_another_customer_cannot_read_a_preview(client, alice, bob, project, knob):
    knob("SLEUTH_PREVIEW_QUEUE", "previews-scored-by-the-test")
    client.force_login(alice)
    url = poll_url(
        client.post(f"/projects/{project.pk}/runs/reward-preview/", FORM).content.decode()
    )
    services.reward_preview_run(preview_id=preview_id(url))
    bobs = project_create(owner=bob, name="Bob's")

    client.force_login(bob)
    on_alices_project = client.get(url)
    on_his_own = client.get(url.replace(f"/projects/{project.pk}/", f"/projects/{bobs.pk}/"))

    assert on_alices_project.status_code == 404
    assert "$1,577 million" not in on_his_own.content.decode()
    assert "expired" in on_his_own.content.decode()
