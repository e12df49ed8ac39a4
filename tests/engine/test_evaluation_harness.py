"""The evaluation harness: metrics per policy, and an OpenAI-compatible model as the agent.

The API model is a local HTTP server started by the test (the only fake): it follows a
script of replies, and like real servers it drops the stop string that ended a reply.
"""

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from openai import OpenAI

from engine.agent.openai_agent import OpenAIAgent
from engine.agent.trajectory import Limits, SamplingParams, SearchCall, Trajectory
from engine.evaluation.harness import evaluate, format_table
from engine.evaluation.metrics import METRIC_KEYS, summarize
from engine.rewards.judge import OfflineJudge

QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"


@dataclass
class Hit:
    chunk_id: str
    text: str
    doc: str = "3M_2018_10K"
    page: int | None = 60
    entity: str = "3M"
    score: float = 1.0


class FakeIndex:
    def search(self, query: str, k: int = 5, question: str = "") -> list[Hit]:
        return [
            Hit(f"3m-{i}", f"Purchases of property, plant and equipment (1,577) {i}")
            for i in range(k)
        ]


@dataclass
class Question:
    question: str = QUESTION
    answer: str = "$1577.00"
    golden_chunk_ids: list = field(default_factory=lambda: ["3m-1", "3m-9"])
    id: str = "q1"


class ScriptedServer:
    """Replies in order with (content, finish_reason); records every request body."""

    def __init__(self, replies: list[tuple[str, str]]) -> None:
        self.replies, self.requests = list(replies), []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                content, finish = server.replies.pop(0)
                payload = json.dumps(
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": finish,
                                "message": {"role": "assistant", "content": content},
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 7, "total_tokens": 17},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Polls for shutdown every 0.05 s, not the default 0.5 s each test's teardown waited.
        threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"


@pytest.fixture
def serve():
    servers = []

    def start(replies):
        servers.append(ScriptedServer(replies))
        return servers[-1]

    yield start
    for server in servers:
        server.http.shutdown()


def agent(server, **limits) -> OpenAIAgent:
    client = OpenAI(base_url=server.url, api_key="test", max_retries=0)
    return OpenAIAgent(
        client, "big-model", FakeIndex(), limits=Limits(results_per_search=2, **limits)
    )


def test_an_api_model_searches_reads_results_and_answers(serve):
    server = serve(
        [("Let me look. <search>3M capex 2018", "stop"), ("<answer>$1,577 million", "stop")]
    )
    trajectory = agent(server).rollout([QUESTION])[0]
    assert [s.query for s in trajectory.searches] == ["3M capex 2018"]
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "$1,577 million")
    assert trajectory.model_tokens == 14


def test_an_api_model_writing_a_scope_alone_searches_the_question_within_it(serve):
    server = serve([("<search>[3M 2018]", "stop"), ("<answer>1577", "stop")])
    trajectory = agent(server).rollout([QUESTION])[0]
    assert [s.query for s in trajectory.searches] == [f"[3M 2018] {QUESTION}"]


def test_the_api_model_gets_the_stop_tags_and_sees_the_results(serve):
    server = serve([("<search>3M capex", "stop"), ("<answer>1577", "stop")])
    agent(server).rollout([QUESTION], SamplingParams(temperature=0.3, seed=5))
    first, second = server.requests
    assert set(first["stop"]) == {"</search>", "</answer>"}
    assert (first["temperature"], first["seed"]) == (0.3, 5)
    assert second["messages"][-2]["content"].endswith("</search>")
    assert "[3m-0]" in second["messages"][-1]["content"]


def test_an_api_model_searching_again_is_shown_the_next_results(serve):
    server = serve(
        [("<search>3M capex", "stop"), ("<search>3M capex", "stop"), ("<answer>1", "stop")]
    )
    trajectory = agent(server).rollout([QUESTION])[0]
    assert [s.chunk_ids for s in trajectory.searches] == [["3m-0", "3m-1"], ["3m-2", "3m-3"]]
    assert "[3m-2]" in server.requests[2]["messages"][-1]["content"]


def test_an_api_model_that_keeps_searching_stops_at_max_turns(serve):
    server = serve([("<search>a", "stop"), ("<search>b", "stop"), ("<search>c", "stop")])
    trajectory = agent(server, max_turns=2).rollout([QUESTION])[0]
    assert trajectory.finish_reason == "max_turns"
    assert len(trajectory.searches) == 2


def test_an_api_reply_cut_by_length_ends_with_max_tokens(serve):
    server = serve([("The capital expenditure of 3M in", "length")])
    assert agent(server).rollout([QUESTION])[0].finish_reason == "max_tokens"


def test_an_api_query_cut_at_the_turn_limit_is_closed_and_run(serve):
    # The server counts 7 tokens a reply: a budget of 20 leaves room for two turns of 5.
    server = serve([("<search>3M capex capex capex", "length"), ("<answer>1577", "stop")])
    trajectory = agent(server, max_new_tokens=20, max_turn_tokens=5).rollout([QUESTION])[0]
    assert [request["max_tokens"] for request in server.requests] == [5, 5]
    assert [s.query for s in trajectory.searches] == ["3M capex capex capex"]
    assert (trajectory.finish_reason, trajectory.answer) == ("answer", "1577")


def test_an_open_query_cut_by_the_budget_ends_with_max_tokens(serve):
    server = serve([("<search>3M capex capex capex", "length")])
    trajectory = agent(server, max_new_tokens=5, max_turn_tokens=64).rollout([QUESTION])[0]
    assert (trajectory.finish_reason, trajectory.searches) == ("max_tokens", [])


def test_the_harness_reports_every_metric_for_the_api_policy(serve):
    server = serve([("<search>capex", "stop"), ("<answer>$1,577 million", "stop")])
    report = evaluate(
        {"openai:big-model": agent(server)},
        [Question()],
        judge=OfflineJudge(),
        count_tokens=lambda text: len(text.split()),
        show_progress=False,
    )
    metrics = report["policies"]["openai:big-model"]
    assert set(metrics) == set(METRIC_KEYS)
    assert (metrics["answer_score"], metrics["pass@k"], metrics["golden_recall"]) == (1.0, 1.0, 0.5)
    assert "openai:big-model" in format_table(report)


def trajectory(answer=None, queries=(), chunks=(), wall_s=1.0) -> Trajectory:
    t = Trajectory(
        question=QUESTION,
        answer=answer,
        wall_s=wall_s,
        finish_reason="answer" if answer else "no_answer",
    )
    t.searches = [SearchCall(q, list(chunks)) for q in queries]
    return t


def test_pass_at_k_counts_a_question_once_any_sample_is_right():
    samples = [[trajectory("$12"), trajectory("$1,577 million")]]
    metrics = summarize([Question()], samples, OfflineJudge(), lambda s: 1)
    assert metrics["pass@k"] == 1.0
    assert metrics["answer_score"] == 0.5


def test_echo_rate_is_the_share_of_trajectories_whose_first_search_is_the_question():
    samples = [[trajectory(queries=[QUESTION.upper(), "capex"]), trajectory(queries=["capex"])]]
    assert summarize([Question()], samples, OfflineJudge(), len)["echo_rate"] == 0.5


def test_retrieved_chunks_counts_distinct_chunks_shown():
    samples = [[trajectory(queries=["a", "b"], chunks=["3m-1", "3m-2"])]]
    metrics = summarize([Question()], samples, OfflineJudge(), len)
    assert (metrics["retrieved_chunks"], metrics["searches_per_question"]) == (2.0, 2.0)
    assert metrics["golden_recall"] == 0.5


def test_searches_after_miss_counts_only_trajectories_whose_first_search_missed():
    golden = Question().golden_chunk_ids[0]
    samples = [
        [
            trajectory(queries=["capex"], chunks=["other"]),  # missed, never searched again
            trajectory(queries=["capex", "capital expenditure"], chunks=["other"]),  # missed
            trajectory(queries=["capex"], chunks=[golden]),  # found at once: not counted
            trajectory(answer="$1,577 million"),  # no search: no first search to miss
        ]
    ]
    metrics = summarize([Question()], samples, OfflineJudge(), len)
    assert metrics["searches_after_miss"] == 1.5
    assert metrics["searches_per_question"] == 1.0


def test_a_checkpoint_folder_is_a_policy_that_runs_through_the_tool_loop(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from engine.agent.models import load_model
    from engine.evaluation.policies import HFPolicy, build_policy
    from tests.helpers.models import tiny_llama

    vocab = {w: i for i, w in enumerate(["[PAD]", "[UNK]", "[EOS]", "<search>", "capex"])}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="[EOS]"
    )
    tiny_llama(tokenizer, max_positions=2048).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)

    policy = build_policy(
        str(tmp_path), tool=FakeIndex(), limits=Limits(max_new_tokens=4), load_model=load_model
    )
    assert isinstance(policy, HFPolicy) and policy.echo_k is None
    trajectory = policy.rollout([QUESTION], SamplingParams(temperature=1.0))[0]
    assert trajectory.model_name == str(tmp_path)
    assert trajectory.finish_reason in ("max_tokens", "no_answer")


def test_an_unknown_policy_is_a_clear_error():
    from engine.evaluation.policies import PolicySpecError, build_policy

    with pytest.raises(PolicySpecError, match="unknown policy"):
        build_policy("no-such-folder", tool=FakeIndex(), limits=Limits(), load_model=None)


def test_sleuth_eval_with_a_missing_index_says_so_and_exits_2(tmp_path, capsys):
    from engine.cli import main

    code = main(["eval", "--index", str(tmp_path / "none"), "--questions", str(tmp_path / "q")])
    assert code == 2
    assert "cannot load index" in capsys.readouterr().err
