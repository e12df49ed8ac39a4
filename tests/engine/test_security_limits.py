"""Engine-side limits against hostile input (issue 14): linear number extraction, capped
answers before the judge, models that never come from the hub or run their own code, and a
parser sandbox without the caller's secrets, without network, with a capped answer."""

import json
import socket
import time
from pathlib import Path

import pytest

from engine.documents import sandbox
from engine.documents.parsing import ParseLimits
from engine.rewards.judge import OfflineJudge
from engine.rewards.quantities import extract_quantities
from engine.rewards.reward import (
    MAX_ANSWER_CHARS,
    MAX_TRUTH_CHARS,
    RewardConfig,
    RewardInput,
    compute_reward,
)

# --- item 3: one request cannot pin a worker --------------------------------------------------


def extraction_seconds(numbers: int) -> float:
    """The least CPU time of three extractions from a text of `numbers` numbers."""
    text = " ".join(f"{i % 1000}.{i % 7}" for i in range(numbers))
    times = []
    for _ in range(3):
        started = time.process_time()  # this process only: other jobs do not count
        found = extract_quantities(text)
        times.append(time.process_time() - started)
        assert len(found) == numbers
    return min(times)


def test_extracting_numbers_takes_time_linear_in_their_count():
    # Was quadratic (each number sliced and searched the text before it): 8k numbers took
    # 1.4 s and each doubling 4x more, so 50k took about a minute. Four times the numbers
    # take about four times as long when linear, sixteen when quadratic; a ratio, not a
    # time, so that a slow or busy machine cannot fail it (a bound of 1 s for 50k did).
    ratio = extraction_seconds(40_000) / extraction_seconds(10_000)
    assert ratio < 8, f"4x the numbers took {ratio:.1f}x the time"


class RecordingJudge(OfflineJudge):
    def __init__(self):
        self.seen = []

    def judge(self, question, ground_truth, answer):
        self.seen.append((ground_truth, answer))
        return super().judge(question, ground_truth, answer)


def test_an_over_long_answer_and_ground_truth_are_cut_before_the_judge_reads_them():
    judge = RecordingJudge()
    answer = " ".join(str(n) for n in range(1, 40_000))  # ~230 KB of numbers
    inp = RewardInput(
        question="What was revenue?",
        ground_truth="Revenue was $5 million. " * 500,
        answer=answer,
        retrieved_chunk_ids=[],
        golden_chunk_ids=[],
        searches=1,
        finish_reason="answer",
    )
    started = time.perf_counter()
    reward = compute_reward(inp, RewardConfig(), judge)
    assert time.perf_counter() - started < 2.0
    ((truth_seen, answer_seen),) = judge.seen
    assert len(answer_seen) == MAX_ANSWER_CHARS and answer.startswith(answer_seen)
    assert len(truth_seen) == MAX_TRUTH_CHARS
    assert reward.details["answer_truncated"] == len(answer)
    assert reward.components["correctness"] == 0.0


# --- item 4: models load from local folders and the cache only -----------------------------


def test_a_model_loads_without_the_hub_and_without_its_own_code(monkeypatch):
    from engine.agent import models

    calls = []

    def refuse(path, **kwargs):
        calls.append(kwargs)
        raise OSError("not cached")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(models.AutoTokenizer, "from_pretrained", refuse)
    with pytest.raises(models.ModelNotFoundError, match="the hub is offline"):
        models.load_model("someone/any-model-id")
    assert calls == [{"local_files_only": True, "trust_remote_code": False}]


# --- item 7: the parser sandbox --------------------------------------------------------------


def test_the_parser_child_sees_no_secret_and_no_network(tmp_path, monkeypatch):
    # Something in the parent that the child must not reach: a listening local service.
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    report = tmp_path / "child.json"
    # A sitecustomize on the parent's PYTHONPATH runs first thing in the child, as a
    # hostile parser library would: it records what the child can see and reach.
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "sitecustomize.py").write_text(
        "import json, os, socket\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()\n"
        "    network = True\n"
        "except OSError:\n"
        "    network = False\n"
        f"open({str(report)!r}, 'w').write(json.dumps({{'env': dict(os.environ), "
        "'network': network}))\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(probe))
    for name in ("SLEUTH_MARKER_SECRET", "S3_SECRET_ACCESS_KEY", "DATABASE_URL", "SECRET_KEY"):
        monkeypatch.setenv(name, "marker-secret-0123456789")
    (tmp_path / "doc.md").write_text("# Title\nSome text.\n")
    try:
        (parsed,) = sandbox.parse_files([tmp_path / "doc.md"])
    finally:
        server.close()

    assert parsed.error is None and parsed.sections[0].title == "Title"
    seen = json.loads(report.read_text())
    assert "marker-secret-0123456789" not in json.dumps(seen["env"])
    assert set(seen["env"]) <= {*sandbox._CHILD_ENV, "PYTHONPATH", "LC_CTYPE", "PWD", "SHLVL"}
    if sandbox.no_network_prefix():
        assert seen["network"] is False
    else:  # a container without namespaces: said in the log, and the env is still minimal
        pytest.skip("no network namespace on this machine")


def test_the_parser_child_reads_neither_the_workers_environment_nor_another_tenants_files(
    tmp_path, monkeypatch
):
    # What an exploited parser would go for: the worker's secrets through /proc, and another
    # tenant's cached index on the worker's disk (readable by the worker's user).
    monkeypatch.setenv("S3_SECRET_ACCESS_KEY", "marker-secret-0123456789")
    other_tenant = tmp_path / "indexes" / "project-7" / "chunks.jsonl"
    other_tenant.parent.mkdir(parents=True)
    other_tenant.write_text('{"text": "another customer\'s filing"}\n')
    beside_the_code = Path(sandbox.__file__).resolve().parents[2] / "var" / "probe.txt"
    beside_the_code.parent.mkdir(exist_ok=True)
    beside_the_code.write_text("a cached index in development")

    try:
        report = sandbox.confinement_report([other_tenant, beside_the_code])
    finally:
        beside_the_code.unlink()

    if report["confinement"] == "none":
        pytest.skip("no Landlock on this kernel: said in the worker's log")
    assert report["read"] == {
        "parent environment": False,
        str(other_tenant): False,
        str(beside_the_code): False,
    }
    assert report["tcp"] is False
    # Confined so, a child still parses every kind (its libraries load beneath its rules).
    (tmp_path / "doc.html").write_text("<h1>Title</h1><p>Some text.</p>")
    (tmp_path / "doc.txt").write_text("Plain text, in a file the child never opens itself.")
    parsed = list(sandbox.parse_files([tmp_path / "doc.html", tmp_path / "doc.txt"]))
    assert [p.error for p in parsed] == [None, None]
    assert "Some text." in parsed[0].sections[0].text


def test_a_parse_over_the_output_cap_is_an_error_from_the_child(tmp_path):
    (tmp_path / "long.txt").write_text("words and more words\n" * 5_000)  # ~105 KB of text
    (tmp_path / "short.md").write_text("# Title\nSome text.\n")
    long, short = sandbox.parse_files(
        [tmp_path / "long.txt", tmp_path / "short.md"], max_output_bytes=20_000
    )
    assert long.error == (
        "the text read from this file is over 0.02 MB; split it into smaller documents"
    )
    assert long.sections == []
    assert short.error is None and short.sections[0].title == "Title"


def test_the_parent_stops_reading_a_child_that_sends_more_than_the_cap(tmp_path):
    # A child that ignores its cap (it was told 1 GB) cannot make the parent buffer it all.
    (tmp_path / "long.txt").write_text("words and more words\n" * 200_000)  # ~4 MB
    child = sandbox._Child(ParseLimits(), max_output_bytes=10**9)
    child.max_output_bytes = 100_000
    try:
        assert child.parse(tmp_path / "long.txt") is None
        assert child.last_error == "output"
        assert len(child.buffer) <= 100_000 + (1 << 20)  # at most one read past the cap
    finally:
        child.close()
    message = sandbox._failure_message("output", ParseLimits(), 100_000)
    assert message.startswith("the text read from this file is over 0.1 MB")


def test_the_child_environment_holds_no_secret(monkeypatch):
    monkeypatch.setenv("SLEUTH_JUDGE_API_KEY", "sk-platform")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret")
    env = sandbox.child_environment()
    assert "sk-platform" not in env.values() and "aws-secret" not in env.values()
    assert env["PYTHONPATH"].split(":")[0] == str(sandbox._PROJECT_ROOT)
