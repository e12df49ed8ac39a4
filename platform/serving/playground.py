"""The playground of a succeeded run: its owner asks the published agent a question and
watches each search, its hits and then the answer, beside a comparison agent's (the echo
baseline, the untrained base model the run started from, or another of their published
agents); a thumbs-up or a corrected answer adds the question to the project's "From the
playground" question set, so the next run learns it.

A question asked is an entry in Django's cache (Redis), `ASK_TTL_SECONDS` long, keyed by a
random id the page polls. Agents answer on the inference queue, through the same service
path as /v1 (serving.services.agent_chat_enqueue): the worker reports each search as task
progress the moment the agent makes it, so each poll shows the searches made so far. The
echo baseline needs no model: the web process searches the run's index with the question
itself (the top `ECHO_RESULTS` chunks) and shows the top hit in place of an answer.

The base model is the run's own starting model (its settings' `model`), offered only while
that name is on the operator's allowlist (runs.services.allowed_models): the page offers
"base", never a model name or path a customer could type. It answers on the inference queue
like the agent, with the agent's published settings (system prompt, limits) and index, only
the trained weights swapped for the untrained ones (serving.inference.load_agent).

Each agent asked takes one of the account's chat slots (serving.chat_slots, with /v1's
chats: one cap per account on the inference queue), given back when a poll finds its answer,
its failure or its timeout; past the cap the question is refused with a 429, nothing queued.
"""

from __future__ import annotations

import logging
import secrets
import time
from dataclasses import dataclass

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.core.cache import cache
from django.http import Http404

from core.ratelimit import rate_limit_exceeded
from corpora.indexing import load_index_for_web
from corpora.services import QuestionImportRejected, question_set_add_question
from engine.search.store import IndexTooLarge
from runs.selectors import run_get_for_user
from runs.services import model_allowed, model_key

from . import chat_slots
from .selectors import PublishedAgent, published_agents
from .services import (
    QUESTION_MAX_CHARS,
    agent_chat_enqueue,
    agent_chat_forget,
    agent_chat_state,
)

logger = logging.getLogger(__name__)

ASK_TTL_SECONDS = 60 * 60
ECHO = "echo"
BASE = "base"
ECHO_RESULTS = 5
SNIPPET_CHARS = 300
FEEDBACK_SET = "From the playground"


class PlaygroundRefused(Exception):
    """A question that was not asked; the message says why. `status` is the HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


@dataclass(frozen=True)
class Playground:
    run: object  # runs.models.Run
    agent: PublishedAgent
    others: list[PublishedAgent]  # the owner's other published agents, to compare with
    base_model: str | None = None  # the model the run started from, if the operator offers it

    @property
    def base_label(self) -> str | None:
        return base_model_label(self.base_model) if self.base_model else None


def base_model_label(name: str) -> str:
    """How the page names a base model: the default's model, a hub id as it is, a model
    folder by its own name (not the operator's path)."""
    if model_key(name) == "default":
        return "SmolLM2-135M"
    return name.rstrip("/").rsplit("/", 1)[-1] if name.startswith(("/", ".", "~")) else name


def _run_base_model(run) -> str | None:
    """The model the run trained from, while it is on the operator's allowlist."""
    name = (run.config or {}).get("model")
    if not isinstance(name, str) or not name.strip():
        return None
    return name if model_allowed(name) else None


def playground_for(*, user, run_id: int) -> Playground:
    """The run's playground when `user` owns it and its agent is published; Http404 else
    (another customer's run, a run that has not succeeded or was not published)."""
    run = run_get_for_user(user=user, run_id=run_id)
    agents = published_agents(user=user)
    mine = [agent for agent in agents.values() if agent.run_id == run.pk]
    if not mine:
        raise Http404("This run has no published agent.")
    return Playground(
        run=run,
        agent=mine[0],
        others=[a for a in agents.values() if a.run_id != run.pk],
        base_model=_run_base_model(run),
    )


def _key(ask_id: str) -> str:
    return f"sleuth:playground:{ask_id}"


def _agent_column(
    agent: PublishedAgent,
    question: str,
    role: str,
    slot: chat_slots.Slot,
    *,
    base_model: str | None = None,
    name: str | None = None,
) -> dict:
    kind, name = ("base", name) if base_model else ("agent", agent.name)
    try:
        task_id = agent_chat_enqueue(agent, question, base_model=base_model).id
    except Exception:  # the broker is down: say so in the column, the page still answers
        logger.warning("playground: could not queue %s", name, exc_info=True)
        slot.release()
        return {"role": role, "kind": kind, "name": name, **_failed("queue")}
    return {
        "role": role,
        "kind": kind,
        "name": name,
        "task_id": task_id,
        "status": "pending",
        "searches": [],
        "answer": None,
        # The chat slot it holds until a poll sees it end (in the cache entry: the poll is
        # another request).
        "slot": [list(slot.keys), slot.member] if slot.keys else None,
    }


def _slots_take(user, count: int) -> list[chat_slots.Slot]:
    """`count` of the account's chat slots, or PlaygroundRefused (429) and none taken."""
    taken: list[chat_slots.Slot] = []
    try:
        for _ in range(count):
            taken.append(chat_slots.acquire(user.pk, site=False))
    except chat_slots.ChatsInFlight as full:
        for slot in taken:
            slot.release()
        raise PlaygroundRefused(
            f"Your account has {full.in_flight} questions and API chats being answered, the "
            f"most it may have at once ({full.cap}). Wait for an answer, then ask again.",
            status=429,
        ) from None
    return taken


def _slot_release(column: dict) -> None:
    held, column["slot"] = column.get("slot"), None
    if held:
        chat_slots.Slot(keys=tuple(held[0]), member=held[1]).release()


def _failed(why: str, refused: IndexTooLarge | None = None) -> dict:
    messages = {
        "queue": "The agent cannot be asked right now: try again in a minute.",
        "failed": "The agent could not answer this question.",
        "timeout": (
            f"No answer within {settings.SLEUTH_INFERENCE_TIMEOUT:.0f} s: the inference "
            "workers are busy or not running. Try again later."
        ),
        "index": "The index this agent searches could not be loaded: try again in a minute.",
    }
    if refused is not None:
        messages["too-large"] = (
            "The echo baseline could not run: this agent's index is too large to search on "
            f"the website (about {refused.estimated_bytes / 2**20:,.0f} MB in memory, past the "
            f"{refused.budget_bytes / 2**20:,.0f} MB a web server keeps for indexes). The "
            "agent itself searches it on the inference workers; compare it with the base "
            "model or another agent instead."
        )
    return {"status": "failed", "error": messages[why], "searches": [], "answer": None}


def _hit(hit) -> dict:
    return {
        "id": hit.chunk_id,
        "document": hit.doc,
        "page": hit.page,
        "text": hit.text[:SNIPPET_CHARS],
    }


def _echo_column(index_prefix: str, question: str) -> dict:
    """The one-shot BM25 baseline: the question itself as the query, no model."""
    started = time.perf_counter()
    column = {"role": "comparison", "kind": "echo", "name": f"echo (BM25, top {ECHO_RESULTS})"}
    try:
        hits = load_index_for_web(index_prefix).search(question, k=ECHO_RESULTS)
    except IndexTooLarge as refused:
        logger.info("playground: %s", refused)
        return {**column, **_failed("too-large", refused)}
    except (BotoCoreError, ClientError, OSError, ValueError):
        logger.warning("playground: index %s could not be loaded", index_prefix, exc_info=True)
        return {**column, **_failed("index")}
    found = [_hit(hit) for hit in hits]
    return {
        **column,
        "status": "done",
        "searches": [{"query": question, "results": found}],
        # Echo writes no answer: the top hit stands in for one.
        "answer": found[0]["text"] if found else None,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "seconds": round(time.perf_counter() - started, 3),
    }


def playground_ask(*, user, playground: Playground, question: str, compare: str = "") -> str:
    """Ask the run's agent `question` (and the comparison agent: "" none, "echo", "base" for
    the untrained model the run started from, or the name of another of the owner's published
    agents); returns the id the page polls. Counts against the account's API rate limit
    (SLEUTH_API_RATE_LIMIT), as a /v1 request does."""
    question = " ".join(question.split())
    if not question:
        raise PlaygroundRefused("Type a question.")
    if len(question) > QUESTION_MAX_CHARS:
        raise PlaygroundRefused(f"Questions are at most {QUESTION_MAX_CHARS} characters.")
    others = {agent.name: agent for agent in playground.others}
    offered = {ECHO, *others, *([BASE] if playground.base_model else [])}
    if compare and compare not in offered:
        raise PlaygroundRefused("Pick a comparison from the list.")
    limit, window = settings.SLEUTH_API_RATE_LIMIT
    if rate_limit_exceeded(key=f"api:user:{user.pk}", limit=limit, window_seconds=window):
        raise PlaygroundRefused(
            f"Too many questions: at most {limit} per {window} s, with your API requests. "
            "Wait a moment.",
            status=429,
        )
    # Echo needs no model: only agents take the inference queue's slots.
    slots = _slots_take(user, 1 if compare in ("", ECHO) else 2)
    columns = [_agent_column(playground.agent, question, "agent", slots[0])]
    if compare == ECHO:
        columns.append(_echo_column(playground.agent.index_prefix, question))
    elif compare == BASE and playground.base_model:
        columns.append(
            _agent_column(
                playground.agent,
                question,
                "comparison",
                slots[1],
                base_model=playground.base_model,
                name=f"base model: {playground.base_label}, untrained",
            )
        )
    elif compare:
        columns.append(_agent_column(others[compare], question, "comparison", slots[1]))
    ask_id = secrets.token_urlsafe(18)
    entry = {
        "user_id": user.pk,
        "run_id": playground.run.pk,
        "question": question,
        "asked_at": time.time(),
        "columns": columns,
    }
    cache.set(_key(ask_id), entry, ASK_TTL_SECONDS)
    return ask_id


def _entry(*, user, playground: Playground, ask_id: str) -> dict | None:
    entry = cache.get(_key(ask_id))
    if not entry or entry["user_id"] != user.pk or entry["run_id"] != playground.run.pk:
        return None
    return entry


def playground_result(*, user, playground: Playground, ask_id: str) -> dict | None:
    """The question as it stands (None once expired, or not this user's and run's): each
    column's status ("pending", "done" or "failed"), its searches so far (query, results
    with document, page and text) and, once done, its answer, tokens and seconds."""
    entry = _entry(user=user, playground=playground, ask_id=ask_id)
    if entry is None:
        return None
    changed = False
    for column in entry["columns"]:
        if column["status"] != "pending":
            continue
        state = agent_chat_state(column["task_id"])
        if state["status"] == "done":
            answer = state["answer"]
            column.update(
                status="done",
                searches=answer["searches"],
                answer=answer["answer"],
                finish_reason=answer["finish_reason"],
                prompt_tokens=answer["prompt_tokens"],
                completion_tokens=answer["completion_tokens"],
                seconds=answer["seconds"],
                latency=round(time.time() - entry["asked_at"], 1),
            )
            agent_chat_forget(column["task_id"])
            _slot_release(column)
            changed = True
        elif state["status"] == "failed":
            column.update(_failed("failed"))
            _slot_release(column)
            changed = True
        elif time.time() - entry["asked_at"] > settings.SLEUTH_INFERENCE_TIMEOUT:
            agent_chat_forget(column["task_id"])
            column.update(_failed("timeout"))
            _slot_release(column)
            changed = True
        elif len(state["searches"]) != len(column["searches"]):
            column["searches"] = state["searches"]
    if changed:
        cache.set(_key(ask_id), entry, ASK_TTL_SECONDS)
    entry["pending"] = any(c["status"] == "pending" for c in entry["columns"])
    return entry


def playground_feedback(
    *, user, playground: Playground, ask_id: str, column: int, helpful: bool, correction: str = ""
) -> dict:
    """A thumbs-up (the column's answer is right) or a thumbs-down with `correction`, the
    right answer: either adds the question with that answer to the project's "From the
    playground" question set (created on first use, under the account's quota). Returns
    {"question_set": the set, "answer": what was added}. PlaygroundRefused says why not."""
    entry = _entry(user=user, playground=playground, ask_id=ask_id)
    if entry is None:
        raise PlaygroundRefused("This question has expired: ask it again.", status=404)
    if not 0 <= column < len(entry["columns"]):
        raise PlaygroundRefused("No such answer.")
    shown = entry["columns"][column]
    if shown.get("feedback"):
        raise PlaygroundRefused(f"Already added, with the answer “{shown['feedback']}”.")
    answer = correction.strip() if not helpful else (shown.get("answer") or "")
    if not helpful and not answer:
        raise PlaygroundRefused("Write the correct answer.")
    if helpful and (not answer or shown["kind"] == ECHO):
        # Echo's top hit stands in for an answer on the page; it is no answer to learn.
        raise PlaygroundRefused("There is no answer to approve: write the correct one.")
    if len(answer) > QUESTION_MAX_CHARS:
        raise PlaygroundRefused(f"Answers are at most {QUESTION_MAX_CHARS} characters.")
    # Claimed first, atomically: a double click (or a poll writing back an older copy of the
    # entry) cannot add the same answer twice.
    claim = f"{_key(ask_id)}:feedback:{column}"
    if not cache.add(claim, answer, ASK_TTL_SECONDS):
        raise PlaygroundRefused(f"Already added, with the answer “{cache.get(claim)}”.")
    try:
        question_set = question_set_add_question(
            project=playground.run.project,
            set_name=FEEDBACK_SET,
            question=entry["question"],
            answer=answer,
        )
    except QuestionImportRejected as error:
        cache.delete(claim)
        raise PlaygroundRefused("; ".join(why for _, why in error.problems)) from None
    except BaseException:
        cache.delete(claim)
        raise
    shown["feedback"] = answer  # once per answer shown: a second click adds nothing
    cache.set(_key(ask_id), entry, ASK_TTL_SECONDS)
    return {"question_set": question_set, "answer": answer}
