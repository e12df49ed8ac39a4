"""The API judge against a local OpenAI-compatible server started by the test.

The server is the only fake here: it stands in for the external model. It answers chat
completions with a JSON verdict (correct when the answer contains the ground truth's
digits), and can be told to stall, fail or babble for the next requests.
"""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from engine.rewards.judge import (
    JudgeCache,
    JudgeConfig,
    JudgeError,
    OfflineJudge,
    OpenAIJudge,
    build_judge,
)
from engine.rewards.prompts import JUDGE_PROMPTS
from engine.rewards.reward import RewardConfig, RewardInput, compute_rewards

QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"


class FakeModel:
    """State shared with the handler: requests seen and scripted misbehaviour."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.script: list[str] = []  # "stall", "drip", "error500", "babble", "prose"; then normal
        self.lock = threading.Lock()
        self.rejects_json_mode = False

    def reply(self, body: dict) -> tuple[int, str, float]:
        with self.lock:
            self.requests.append(body)
            action = self.script.pop(0) if self.script else "normal"
            if self.rejects_json_mode and "response_format" in body:
                return 400, json.dumps({"error": {"message": "response_format unsupported"}}), 0.0
        user = body["messages"][-1]["content"]
        correct = "1,577" in user.split("1577.00", 1)[-1]  # the answer, after the truth
        verdict = json.dumps({"correct": correct, "score": 1.0 if correct else 0.0, "reason": "ok"})
        if action == "stall":
            return 200, verdict, 3.0
        if action == "drip":
            return 200, verdict, -0.1  # every byte of the reply 0.1 s after the last
        if action == "error500":
            return 500, json.dumps({"error": {"message": "overloaded"}}), 0.0
        if action == "babble":
            return 200, "I think the answer looks right to me.", 0.0
        if action == "prose":
            return 200, f"Here is my verdict:\n```json\n{verdict}\n```", 0.0
        return 200, verdict, 0.0


@pytest.fixture
def fake_model():
    model = FakeModel()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            status, content, delay = model.reply(body)
            time.sleep(max(delay, 0))
            if status == 200:
                payload = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": content},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                content = json.dumps(payload)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(content.encode())))
                self.end_headers()
                if delay >= 0:
                    self.wfile.write(content.encode())
                for byte in content.encode() if delay < 0 else b"":
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(-delay)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting: that is the timeout under test

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    model.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    yield model
    server.shutdown()
    server.server_close()


def make_judge(fake_model, **kwargs) -> OpenAIJudge:
    options = dict(timeout=5.0, retries=2, seed=0, backoff=0.01)
    options.update(kwargs)
    return OpenAIJudge(fake_model.base_url, "test-key", "judge-model", **options)


def test_the_verdict_comes_from_the_model_as_json(fake_model):
    judge = make_judge(fake_model)
    right = judge.judge(QUESTION, "$1577.00", "$1,577 million")
    wrong = judge.judge(QUESTION, "$1577.00", "$1,373 million")
    assert (right.correct, right.score) == (True, 1.0)
    assert (wrong.correct, wrong.score) == (False, 0.0)
    request = fake_model.requests[0]
    assert request["model"] == "judge-model"
    assert request["response_format"] == {"type": "json_object"}


def test_each_call_samples_one_of_at_least_four_equivalent_prompts(fake_model):
    assert len(JUDGE_PROMPTS) >= 4
    judge = make_judge(fake_model)
    used = {judge.judge(QUESTION, "$1577.00", f"${n} million").prompt_id for n in range(40)}
    assert used == {p.id for p in JUDGE_PROMPTS}
    systems = {r["messages"][0]["content"] for r in fake_model.requests}
    assert len(systems) == len(JUDGE_PROMPTS)


def test_a_verdict_wrapped_in_prose_is_still_read(fake_model):
    fake_model.script = ["prose"]
    assert make_judge(fake_model).judge(QUESTION, "$1577.00", "$1,577 million").correct


def test_a_stalled_request_times_out_and_is_retried(fake_model):
    fake_model.script = ["stall"]
    verdict = make_judge(fake_model, timeout=0.5).judge(QUESTION, "$1577.00", "$1,577 million")
    assert verdict.correct
    assert len(fake_model.requests) == 2


def test_a_reply_that_drips_in_is_cut_off_at_the_calls_deadline(fake_model):
    # Each byte comes well within the read timeout, the whole reply (~300 bytes) in ~30 s.
    fake_model.script = ["drip"] * 3
    started = time.monotonic()
    with pytest.raises(JudgeError, match="TimeoutError"):
        make_judge(fake_model, timeout=0.5).judge(QUESTION, "$1577.00", "$1,577 million")
    assert time.monotonic() - started < 10  # three attempts of 0.5 s, not 3 × 30 s
    assert len(fake_model.requests) == 3


def test_server_errors_and_unreadable_replies_are_retried(fake_model):
    fake_model.script = ["error500", "babble"]
    assert make_judge(fake_model).judge(QUESTION, "$1577.00", "$1,577 million").correct
    assert len(fake_model.requests) == 3


def test_a_server_without_json_mode_is_asked_again_without_it(fake_model):
    fake_model.rejects_json_mode = True
    judge = make_judge(fake_model, retries=1)
    assert judge.judge(QUESTION, "$1577.00", "$1,577 million").correct
    assert judge.judge(QUESTION, "$1577.00", "USD 1,577 million").correct
    assert "response_format" not in fake_model.requests[-1]
    assert len(fake_model.requests) == 3  # one rejection, then plain requests only


def test_giving_up_raises_a_judge_error_that_names_the_endpoint(fake_model):
    fake_model.script = ["babble"] * 3
    with pytest.raises(JudgeError, match="failed after 3 attempts") as error:
        make_judge(fake_model).judge(QUESTION, "$1577.00", "$1,577 million")
    assert fake_model.base_url in str(error.value)


def test_a_repeated_judgement_with_the_same_prompt_is_served_from_the_cache(fake_model):
    judge = make_judge(fake_model, prompts=JUDGE_PROMPTS[:1])
    first = judge.judge(QUESTION, "$1577.00", "$1,577 million")
    second = judge.judge(QUESTION, "$1577.00", "$1,577 million")
    assert first == second
    assert len(fake_model.requests) == 1
    assert judge.cache.hits == 1
    judge.judge(QUESTION, "$1577.00", "$1.577 billion")  # another answer: another key
    assert len(fake_model.requests) == 2


def test_the_cache_survives_in_a_file(fake_model, tmp_path):
    path = tmp_path / "verdicts.sqlite"
    make_judge(fake_model, cache=JudgeCache(path)).judge(QUESTION, "$1577.00", "$1,577 million")
    again = make_judge(fake_model, cache=JudgeCache(path))
    again.judge(QUESTION, "$1577.00", "$1,577 million")
    assert len(fake_model.requests) == 1


def test_a_run_whose_judge_always_fails_still_finishes_and_reports_it(fake_model):
    fake_model.script = ["error500"] * 100
    config = RewardConfig(judge=JudgeConfig(base_url=fake_model.base_url, model="m", retries=1))
    judge = make_judge(fake_model, retries=1)
    inputs = [
        RewardInput(QUESTION, "$1577.00", f"${n} million", ["c1"], ["c1"], 1, "answer")
        for n in range(6)
    ]
    results = compute_rewards(inputs, config, judge)
    assert len(results) == 6
    assert all(r.errors and r.components["correctness"] == 0.0 for r in results)
    assert all(r.components["golden_recall"] == 1.0 for r in results)


def test_build_judge_is_offline_without_an_endpoint_and_api_with_one(fake_model):
    assert isinstance(build_judge(None), OfflineJudge)
    assert isinstance(build_judge(RewardConfig()), OfflineJudge)
    api = build_judge(JudgeConfig(base_url=fake_model.base_url, model="judge-model"))
    assert isinstance(api, OpenAIJudge)
    assert api.judge(QUESTION, "$1577.00", "$1,577 million").correct


def test_the_meter_counts_each_verdict_asked_not_cached_ones_nor_retries(fake_model):
    """Whoever pays for the endpoint counts its calls with a meter (the platform's judge
    budget): once per verdict asked, before the request; a meter that raises refuses the
    call, and the refusal reaches the reward's caller instead of a 'judge failed' score."""
    counted = []
    judge = make_judge(fake_model, prompts=JUDGE_PROMPTS[:1], meter=lambda: counted.append(1))
    fake_model.script = ["error500"]  # the first verdict takes a retry
    judge.judge(QUESTION, "$1577.00", "$1,577 million")
    judge.judge(QUESTION, "$1577.00", "$1,577 million")  # from the cache
    assert len(fake_model.requests) == 2 and len(counted) == 1

    class Spent(Exception):
        pass

    def refuse():
        raise Spent("spent")

    judge.meter = refuse
    inputs = [RewardInput(QUESTION, "$1577.00", "$1.577 billion", [], [], 1, "answer")]
    with pytest.raises(Spent):
        compute_rewards(inputs, RewardConfig(), judge)
    assert len(fake_model.requests) == 2  # the refused verdict was never asked


@pytest.mark.parametrize("prompt", JUDGE_PROMPTS, ids=lambda p: p.id)
def test_every_prompt_states_the_offline_judges_later_kinds(prompt):
    # The offline judge learned these kinds from its labelled set (docs/judge-rejudge.md); a
    # wording that leaves one out lets the LLM judge credit what the offline one does not.
    # Each kind is a list of word groups; every group needs one of its words.
    kinds = {
        "a listed truth needs every item": [("list",), ("item",)],
        "a bare name or period claims nothing": [("claim",), ("subject", "name")],
        "a change needs both ends or its direction": [("both ends", "x then y"), ("direction",)],
        "the figure of the period asked": [("period", "year"), ("asked",)],
        "codes exactly": [("exactly",), ("version",), ("option",), ("path",)],
        "every figure with its words": [("every figure",), ("both ends",), ("qualif",)],
        "a bound the same way": [("bound",), ("at least",), ("less than",)],
        "the clause of the case asked": [("clause",), ("case",)],
        "a conversion to the answer's last digit": [("convert",), ("last digit",)],
        "an exception after a yes or no": [("exception",), ("condition",)],
    }
    said = prompt.system.lower()
    for kind, groups in kinds.items():
        assert all(any(word in said for word in group) for group in groups), kind
