"""The judge's key goes only where its caller says, and a customer's URL reaches only public
hosts: checked when the URL is given and again at every connect, redirects not followed.

The servers here are real local HTTP servers that log what they receive; only DNS is faked
(engine.net.resolve), to play a name that resolves to a private address.
"""

import httpx2
import pytest

from engine import net
from engine.rewards.judge import JudgeConfig, JudgeError, OpenAIJudge, build_judge
from tests.helpers.judges import LoggingServer

QUESTION = "What is the FY2018 capital expenditure amount (in USD millions) for 3M?"
PLATFORM_KEY = "platform-secret-marker-7f3a"


@pytest.fixture
def server():
    s = LoggingServer()
    yield s
    s.close()


@pytest.fixture
def other_server():
    s = LoggingServer()
    yield s
    s.close()


@pytest.fixture
def fake_dns(monkeypatch):
    """Names → addresses for engine.net; a list of answers is served one per lookup."""
    table: dict[str, list] = {}

    def resolve(host, port):
        if host not in table:
            raise OSError(f"unknown host {host}")
        answers = table[host]
        return answers.pop(0) if len(answers) > 1 else answers[0]

    monkeypatch.setattr(net, "resolve", resolve)
    return table


# --- the key ----------------------------------------------------------------------------


def test_the_engine_sends_no_key_from_the_environment_to_a_configured_url(server, monkeypatch):
    monkeypatch.setenv("SLEUTH_JUDGE_API_KEY", PLATFORM_KEY)
    judge = build_judge(JudgeConfig(base_url=server.base_url, model="m", retries=0))

    assert judge.judge(QUESTION, "$1577.00", "$1,577 million").correct
    assert server.requests
    assert not any(PLATFORM_KEY in str(r["headers"]) for r in server.requests)


def test_the_key_given_by_the_caller_is_the_one_sent(server, monkeypatch):
    monkeypatch.setenv("SLEUTH_JUDGE_API_KEY", PLATFORM_KEY)
    config = JudgeConfig(base_url=server.base_url, model="m", retries=0)

    build_judge(config, api_key="customer-key-1").judge(QUESTION, "$1577.00", "$1,577 million")

    assert server.authorizations() == ["Bearer customer-key-1"]


def test_a_named_judge_must_be_resolved_by_the_platform():
    with pytest.raises(ValueError, match="defined by the platform"):
        build_judge(JudgeConfig(name="house"))


def test_old_run_configs_naming_a_key_variable_still_load_and_name_none():
    config = JudgeConfig.from_dict(
        {"base_url": "https://judge.example.com/v1", "model": "m", "api_key_env": "X"}
    )
    assert not hasattr(config, "api_key_env")


# --- which URLs ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://judge.example.com/v1",  # not https
        "ftp://judge.example.com/v1",
        "https://127.0.0.1/v1",
        "https://10.1.2.3/v1",
        "https://192.168.0.10/v1",
        "https://169.254.169.254/latest/meta-data/",  # cloud metadata
        "https://100.64.0.1/v1",  # shared (CGNAT)
        "https://0.0.0.0/v1",
        "https://224.0.0.1/v1",  # multicast
        "https://[::1]/v1",
        "https://[::ffff:127.0.0.1]/v1",  # IPv4-mapped loopback
        "https://[fd00::1]/v1",
        "https://redis/v1",  # a bare service name
        "https://postgres:5432/",
        "https://user:secret@judge.example.com/v1",
    ],
)
def test_customer_urls_must_be_public_https_and_the_refusal_says_nothing_more(url, fake_dns):
    fake_dns["judge.example.com"] = [["93.184.216.34"]]
    with pytest.raises(net.UnsafeURL) as refused:
        net.check_url(url)
    assert str(refused.value) == net.REFUSED


def test_a_name_resolving_to_a_private_address_is_refused(fake_dns):
    fake_dns["internal.example.com"] = [["93.184.216.34", "10.0.0.7"]]  # one bad answer is enough
    with pytest.raises(net.UnsafeURL):
        net.check_url("https://internal.example.com/v1")


def test_a_public_https_url_passes(fake_dns):
    fake_dns["judge.example.com"] = [["93.184.216.34", "2606:2800:220:1::1"]]
    assert net.check_url("https://judge.example.com/v1") == "https://judge.example.com/v1"


@pytest.mark.parametrize(
    "address, public",
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.2", False),
        ("172.16.5.4", False),
        ("169.254.1.1", False),
        ("240.0.0.1", False),  # reserved
        ("fe80::1%eth0", False),
        ("::ffff:10.0.0.1", False),
        ("2002:7f00:1::", False),  # 6to4 wrapping 127.0.0.1
    ],
)
def test_which_addresses_are_public(address, public):
    assert net.is_public(address) is public


# --- at connect time -------------------------------------------------------------------


def test_a_name_that_resolves_to_loopback_is_refused_when_connecting(server, fake_dns):
    fake_dns["judge.example.com"] = [["127.0.0.1"]]
    client = net.public_http_client(timeout=2)

    with pytest.raises(httpx2.ConnectError, match="public https"):
        client.post(f"https://judge.example.com:{server.port}/v1/chat/completions")
    assert server.connections == 0


def test_dns_rebinding_passes_the_check_but_not_the_connect(server, fake_dns):
    # The first lookup (the check) says public, the next ones (the connect) say loopback.
    fake_dns["rebind.example.com"] = [["93.184.216.34"], ["127.0.0.1"]]
    url = f"https://rebind.example.com:{server.port}/v1"
    net.check_url(url)
    judge = OpenAIJudge(url, "k", "m", retries=0, http_client=net.public_http_client(timeout=2))

    with pytest.raises(JudgeError):
        judge.judge(QUESTION, "$1577.00", "$1,577 million")
    assert server.connections == 0


def test_the_checked_client_connects_to_the_address_it_checked(server, fake_dns):
    # Development setting: private addresses allowed; the name is still resolved by us.
    fake_dns["judge.local.test"] = [["127.0.0.1"]]
    client = net.public_http_client(timeout=2, allow_private=True)
    url = f"http://judge.local.test:{server.port}/v1"
    judge = OpenAIJudge(url, "customer-key", "m", retries=0, http_client=client)

    assert judge.judge(QUESTION, "$1577.00", "$1,577 million").correct
    assert server.requests[0]["headers"]["host"] == f"judge.local.test:{server.port}"


def test_redirects_are_not_followed(server, other_server):
    server.redirect_to = other_server.base_url + "/chat/completions"
    client = net.public_http_client(timeout=2, allow_private=True)

    assert client.post(server.base_url + "/chat/completions").status_code == 302
    judge = OpenAIJudge(server.base_url, "customer-key", "m", retries=0, http_client=client)
    with pytest.raises(JudgeError):
        judge.judge(QUESTION, "$1577.00", "$1,577 million")
    assert len(server.requests) == 2
    assert other_server.requests == []
