"""Answer judges: is this answer the ground truth, said another way?

Two implementations behind one protocol. `OpenAIJudge` asks any OpenAI-compatible endpoint
(a hosted model, an sglang or vLLM server), sampling one of several equivalent prompts per
call. `OfflineJudge` (engine/rewards/offline_judge/) needs nothing: it credits an answer
only when it commits to the truth (figures with sign, scale, unit and precision; the entity,
option or yes/no; otherwise the truth's words, with no negation, hedge or opposite), held to
its labelled sets (tests/data/judge_set*.jsonl). Both state the same standard.
`build_judge` picks the API judge when an endpoint is configured and the offline one when
not.

The engine never looks up a key for an endpoint by itself: whoever chose the URL passes the
key (`build_judge(config, api_key=...)`). The CLI reads it from $SLEUTH_JUDGE_API_KEY, its
user being the operator who typed the URL; the platform resolves operator-defined judges by
name and a customer's own endpoint with that customer's key, through a client that only
reaches public addresses (engine.net).
"""

import hashlib
import json
import random
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar, Protocol

from engine.rewards.offline_judge import OfflineJudge
from engine.rewards.prompts import JUDGE_PROMPTS, JudgePrompt
from engine.rewards.verdict import Verdict
from engine.settings import Settings

__all__ = ["Judge", "JudgeConfig", "JudgeError", "OfflineJudge", "OpenAIJudge", "Verdict"]


# Where the command-line tools read the key for the endpoint their user (the operator)
# names. Only the CLIs read it; the platform never sends it to a customer's URL.
CLI_KEY_ENV = "SLEUTH_JUDGE_API_KEY"


class JudgeError(RuntimeError):
    """The judge could not reach a verdict (endpoint down, timeouts, unreadable replies)."""


class Judge(Protocol):
    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict: ...


@dataclass
class JudgeConfig(Settings):
    """Where the API judge lives. Stored per run as JSON, so never a key. `name` is a judge
    the platform's operator defined (its URL, model and key are resolved by the platform,
    not stored with the run); otherwise `base_url` and `model` say where to ask."""

    name: str = ""
    base_url: str = ""
    model: str = ""
    timeout: float = 30.0
    retries: int = 2
    concurrency: int = 8
    cache_path: str | None = None

    SETTINGS_LABEL: ClassVar[str] = "judge"
    # Older run configs named an environment variable for the key; keys are now given by
    # whoever builds the judge, so the name means nothing any more.
    LEGACY_SETTINGS: ClassVar[frozenset[str]] = frozenset({"api_key_env"})


# --- API judge -------------------------------------------------------------------------


class JudgeCache:
    """Verdicts keyed by (model, prompt, question, ground truth, answer), in memory and,
    with a path, in a SQLite file so that a resumed run does not pay for them twice."""

    def __init__(self, path: str | Path | None = None) -> None:
        self._memory: dict[str, Verdict] = {}
        self._lock = threading.Lock()
        self._db = None
        if path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(path), check_same_thread=False)
            self._db.execute("CREATE TABLE IF NOT EXISTS verdicts (key TEXT PRIMARY KEY, v TEXT)")
        self.hits = 0

    @staticmethod
    def key(model: str, prompt_id: str, question: str, ground_truth: str, answer: str) -> str:
        raw = json.dumps([model, prompt_id, question, ground_truth, answer])
        return hashlib.sha256(raw.encode()).hexdigest()

    def get(self, key: str) -> Verdict | None:
        with self._lock:
            verdict = self._memory.get(key)
            if verdict is None and self._db is not None:
                row = self._db.execute("SELECT v FROM verdicts WHERE key = ?", (key,)).fetchone()
                if row:
                    verdict = Verdict(**json.loads(row[0]))
                    self._memory[key] = verdict
            if verdict is not None:
                self.hits += 1
            return verdict

    def put(self, key: str, verdict: Verdict) -> None:
        with self._lock:
            self._memory[key] = verdict
            if self._db is not None:
                self._db.execute(
                    "INSERT OR REPLACE INTO verdicts VALUES (?, ?)",
                    (key, json.dumps(asdict(verdict))),
                )
                self._db.commit()

    def __len__(self) -> int:
        return len(self._memory)


# A verdict is a short JSON object; anything this long is not one.
MAX_REPLY_BYTES = 1 << 20


class OpenAIJudge:
    """A judge on any OpenAI-compatible chat endpoint, with prompt sampling, a JSON verdict,
    per-call timeouts, retries with backoff, and a verdict cache."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        model: str,
        timeout: float = 30.0,
        retries: int = 2,
        cache: JudgeCache | None = None,
        *,
        prompts: tuple[JudgePrompt, ...] = JUDGE_PROMPTS,
        seed: int | None = None,
        backoff: float = 0.5,
        http_client: Any = None,
        meter: Callable[[], None] | None = None,
    ) -> None:
        import openai  # imported here: the offline path must not need the client

        self._openai = openai
        # Our own retry loop (max_retries=0) so that unreadable replies are retried too.
        # `http_client`: e.g. engine.net.public_http_client() for a customer's URL.
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "EMPTY",
            timeout=timeout,
            max_retries=0,
            http_client=http_client,
        )
        self.base_url, self.model, self.timeout = base_url, model, timeout
        self.retries, self.backoff = retries, backoff
        self.prompts = prompts
        self.cache = cache if cache is not None else JudgeCache()
        self.json_mode = True  # dropped if the server rejects response_format
        self._rng = random.Random(seed)
        self._rng_lock = threading.Lock()
        # Called once before each verdict asked of the endpoint (never for a cached one, nor
        # again for a retry of it): whoever pays for the endpoint counts its calls there, and
        # may refuse one by raising (anything but JudgeError, which the reward records as a
        # failed verdict and carries on).
        self.meter = meter

    def judge(self, question: str, ground_truth: str, answer: str) -> Verdict:
        with self._rng_lock:
            prompt = self._rng.choice(self.prompts)
        key = JudgeCache.key(self.model, prompt.id, question, ground_truth, answer)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        if self.meter is not None:
            self.meter()
        verdict = self._ask(prompt, question, ground_truth, answer)
        self.cache.put(key, verdict)
        return verdict

    def _ask(self, prompt: JudgePrompt, question: str, ground_truth: str, answer: str) -> Verdict:
        errors = []
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            json_mode = self.json_mode
            extra = {"response_format": {"type": "json_object"}} if json_mode else {}
            try:
                content = self._complete(prompt.messages(question, ground_truth, answer), extra)
                return parse_verdict(content, prompt.id)
            except self._openai.BadRequestError as error:
                errors.append(f"BadRequestError: {error}")
                if json_mode:
                    # Not every OpenAI-compatible server knows JSON mode; the prompts ask
                    # for JSON anyway, so carry on without it.
                    self.json_mode = False
                    continue
            except (self._openai.AuthenticationError, self._openai.NotFoundError) as error:
                # Retrying a wrong key or model name only wastes time.
                raise JudgeError(f"judge at {self.base_url} refused: {error}") from error
            except (self._openai.OpenAIError, ValueError, TimeoutError) as error:
                errors.append(f"{type(error).__name__}: {error}")
        raise JudgeError(
            f"judge at {self.base_url} (model {self.model!r}) failed after "
            f"{self.retries + 1} attempts; last error: {errors[-1]}"
        )

    def _complete(self, messages: list[dict], extra: dict) -> str:
        """The reply's text, read within `timeout` in all: the HTTP client's timeout bounds
        each read, so a server that drips a byte at a time would hold a run forever."""
        deadline = time.monotonic() + self.timeout
        with self.client.chat.completions.with_streaming_response.create(
            model=self.model,
            messages=messages,
            temperature=0.0,
            max_tokens=200,
            timeout=self.timeout,
            **extra,
        ) as response:
            body = bytearray()
            for piece in response.iter_bytes():
                body += piece
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no whole reply within {self.timeout:g} s")
                if len(body) > MAX_REPLY_BYTES:
                    raise ValueError(f"reply longer than {MAX_REPLY_BYTES} bytes")
        try:
            return json.loads(body)["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError) as error:
            raise ValueError(f"not a chat completion: {bytes(body[:200])!r}") from error


def parse_verdict(content: str, prompt_id: str) -> Verdict:
    """A Verdict from a judge's JSON reply; tolerates prose or code fences around the JSON."""
    match = re.search(r"\{.*\}", content, re.S)
    if not match:
        raise ValueError(f"no JSON object in the judge's reply: {content[:200]!r}")
    data = json.loads(match.group(0))
    correct = data.get("correct")
    if isinstance(correct, str):
        correct = {"true": True, "yes": True, "false": False, "no": False}.get(correct.lower())
    if not isinstance(correct, bool):
        raise ValueError(f"the judge's reply has no true/false 'correct': {content[:200]!r}")
    try:
        score = float(data.get("score", 1.0 if correct else 0.0))
    except (TypeError, ValueError):
        score = 1.0 if correct else 0.0
    return Verdict(
        correct=correct,
        score=min(max(score, 0.0), 1.0),
        reason=str(data.get("reason", ""))[:500],
        prompt_id=prompt_id,
    )


def build_judge(
    config: Any = None,
    *,
    api_key: str = "",
    http_client: Any = None,
    meter: Callable[[], None] | None = None,
) -> Judge:
    """The API judge when `config` (a JudgeConfig, or a RewardConfig holding one) names an
    endpoint; the offline judge otherwise.

    `api_key` goes to `base_url` and nowhere else: the caller that chose the URL chooses the
    key (the engine reads none from the environment). `http_client` replaces the default
    HTTP client, e.g. with one that refuses private addresses for a customer's URL. `meter`
    is called before each verdict the API judge asks of its endpoint (`OpenAIJudge`)."""
    judge_config = getattr(config, "judge", config)
    if not isinstance(judge_config, JudgeConfig):
        return OfflineJudge()
    if judge_config.name and not judge_config.base_url:
        raise ValueError(
            f"the judge {judge_config.name!r} is defined by the platform; "
            "give its base_url and model instead"
        )
    if not judge_config.base_url:
        return OfflineJudge()
    if not judge_config.model:
        raise ValueError("the judge has a base_url but no model; set judge.model")
    return OpenAIJudge(
        base_url=judge_config.base_url,
        api_key=api_key,
        model=judge_config.model,
        timeout=judge_config.timeout,
        retries=judge_config.retries,
        cache=JudgeCache(judge_config.cache_path),
        http_client=http_client,
        meter=meter,
    )
