"""The OpenAI-compatible API at /v1: a customer's `openai` client, pointed here with a
personal API token, lists their published agents and asks them questions.

- `GET /v1/models`: the caller's published agents (serving.selectors.published_agents).
- `POST /v1/chat/completions` with an agent's name as `model`: the last user message is the
  question; an inference worker runs the agent's search loop on its project's index and
  the answer comes back as the assistant message, each search the agent made as a
  `tool_calls` entry (`search` with its query; the server already ran them, so
  `finish_reason` is "stop", or "length" when the agent ran out of turns or tokens
  without an answer). The chunks each search found are in the response's `sleuth` field.
  With `stream` the searches arrive as chunks while the agent works, then the answer,
  then `data: [DONE]`.

- `POST /v1/files`, `GET /v1/files`, `GET /v1/files/{id}`: question files (purpose
  "fine-tune") and documents ("assistants", "user_data"); `/v1/fine_tuning/jobs` and its
  retrieve, cancel, events and checkpoints: runs. serving.jobs says how they map, and which
  project a new file goes to (the `OpenAI-Project` header or a `project` parameter).
- What OpenAI has no word for is Sleuth's own, under the same token (serving.rest):
  `/v1/projects` with their documents and question sets, a run's metrics and checkpoint
  downloads.

Errors are OpenAI's shape (`{"error": {"message", "type", "code"}}`) with its statuses, so
the client raises its usual exceptions: 401 for a missing, unknown or revoked token, 404 for
a model the caller has not published (another customer's included), 429 past the rate
limit, past an account's uploads or new projects (core.ratelimit.account_throttled, one
count with the website's), or past the chats one account, the whole site or one web
process may have in flight at once (serving.chat_slots: each chat holds a web thread until
its answer), 504 when
no answer came in time.
"""

import json
import logging
import time
import uuid
from typing import Annotated

from celery.exceptions import TimeoutError as ResultTimeout
from django.conf import settings
from django.http import HttpRequest, JsonResponse, StreamingHttpResponse
from ninja import File, Form, NinjaAPI, Schema
from ninja.errors import AuthenticationError
from ninja.errors import ValidationError as NinjaValidationError
from ninja.files import UploadedFile
from ninja.security import HttpBearer
from pydantic import Field

from core.ratelimit import (
    account_limit_message,
    account_throttled,
    client_bucket,
    rate_limit_exceeded,
    retry_words,
)

from . import chat_slots, jobs, rest
from .selectors import PublishedAgent, published_agents
from .services import (
    QUESTION_MAX_CHARS,
    agent_chat_enqueue,
    api_token_authenticate,
    scope_needed,
)

logger = logging.getLogger(__name__)


class ApiError(Exception):
    def __init__(self, status: int, message: str, kind: str, code: str | None = None, **headers):
        super().__init__(message)
        self.status, self.message, self.kind, self.code, self.headers = (
            status,
            message,
            kind,
            code,
            headers,
        )


def error_response(error: ApiError) -> JsonResponse:
    response = JsonResponse(
        {
            "error": {
                "message": error.message,
                "type": error.kind,
                "param": getattr(error, "param", None),
                "code": error.code,
            }
        },
        status=error.status,
    )
    for name, value in error.headers.items():
        response[name.replace("_", "-")] = value
    return response


def _throttled(window: int, message: str) -> ApiError:
    # x-should-retry: the openai client would otherwise retry at once and count again.
    return ApiError(
        429, message, "rate_limit_error", "rate_limit_exceeded", Retry_After=str(window)
    )


class TokenAuth(HttpBearer):
    """`Authorization: Bearer sk-sleuth-…`, a personal API token; the request runs as its
    owner. Failed tokens count against the client's address, valid ones against their owner."""

    def authenticate(self, request: HttpRequest, token: str):
        found = api_token_authenticate(raw=token)
        if found is None:
            limit, window = settings.SLEUTH_API_AUTH_FAILURE_LIMIT
            if rate_limit_exceeded(
                key=f"api-auth:ip:{client_bucket(request)}", limit=limit, window_seconds=window
            ):
                raise _throttled(window, "Too many requests with invalid API tokens.")
            return None
        limit, window = settings.SLEUTH_API_RATE_LIMIT
        if rate_limit_exceeded(key=f"api:user:{found.user_id}", limit=limit, window_seconds=window):
            raise _throttled(
                window, f"Rate limit reached: at most {limit} requests per {window} s. Slow down."
            )
        needed = scope_needed(request.method, request.path)
        if not any(found.allows(scope) for scope in needed):
            raise ApiError(
                403,
                f"This token may {' and '.join(found.scope_list)}, not {' or '.join(needed)}. "
                f"Create a token with the {needed[0]} scope on the API tokens page.",
                "permission_error",
                "insufficient_scope",
            )
        request.user = found.user
        return found


api = NinjaAPI(
    title="Sleuth API",
    version="1",
    description=(
        "OpenAI-compatible endpoints for published Sleuth search agents, files and "
        "fine-tuning jobs, and Sleuth's own: projects, documents, question sets, run "
        "metrics and checkpoint downloads."
    ),
    auth=TokenAuth(),
    urls_namespace="v1",
)


@api.exception_handler(ApiError)
def _api_error(request, error: ApiError):
    return error_response(error)


@api.exception_handler(jobs.JobsError)
def _jobs_error(request, error: jobs.JobsError):
    problem = ApiError(error.status, error.message, "invalid_request_error", error.code)
    problem.param = error.param
    return error_response(problem)


@api.exception_handler(AuthenticationError)
def _unauthorized(request, error):
    return error_response(
        ApiError(
            401,
            "Missing or invalid API token. Create one on your account's API tokens page and "
            "send it as `Authorization: Bearer <token>`.",
            "invalid_request_error",
            "invalid_api_key",
        )
    )


@api.exception_handler(NinjaValidationError)
def _invalid(request, error):
    problems = "; ".join(
        f"{'.'.join(str(p) for p in e.get('loc', [])[1:]) or 'body'}: {e.get('msg')}"
        for e in error.errors
    )
    return error_response(ApiError(400, f"Invalid request: {problems}", "invalid_request_error"))


def _model_object(agent: PublishedAgent) -> dict:
    return {
        "id": agent.name,
        "object": "model",
        "created": int(agent.created.timestamp()),
        "owned_by": agent.project,
    }


def _agent_for(request, name: str) -> PublishedAgent:
    agent = published_agents(user=request.user).get(name)
    if agent is None:
        raise ApiError(
            404,
            f"The model `{name}` does not exist or you do not have access to it. "
            "GET /v1/models lists your published agents.",
            "invalid_request_error",
            "model_not_found",
        )
    return agent


@api.get("/models")
def models_list(request):
    agents = published_agents(user=request.user)
    return {"object": "list", "data": [_model_object(a) for a in agents.values()]}


@api.get("/models/{model}")
def models_retrieve(request, model: str):
    return _model_object(_agent_for(request, model))


# What a sampler can honour: OpenAI's temperature range, a 64-bit seed, a positive token count
# (the agent's own limits cut it further). NaN, infinities and 2**80 are refused with a 400
# rather than reaching the inference worker.
Temperature = Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)]
Seed = Annotated[int, Field(ge=0, lt=2**63)]
TokenCount = Annotated[int, Field(ge=1, le=1_000_000)]


class ChatRequest(Schema):
    model: str
    messages: list[dict]
    stream: bool = False
    temperature: Temperature | None = None
    seed: Seed | None = None
    max_tokens: TokenCount | None = None
    max_completion_tokens: TokenCount | None = None
    stream_options: dict | None = None


def _question(messages: list[dict]) -> str:
    """The last user message's text (the agent answers one question; earlier turns and
    system messages are not used: the agent keeps the prompt it was trained with)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(part.get("text", "") for part in content if isinstance(part, dict))
        question = content.strip() if isinstance(content, str) else ""
        if question:
            if len(question) > QUESTION_MAX_CHARS:
                raise ApiError(
                    400,
                    f"The question is {len(question)} characters; an agent answers "
                    f"questions of at most {QUESTION_MAX_CHARS}.",
                    "invalid_request_error",
                )
            return question
    raise ApiError(
        400, "The messages hold no user message with text to answer.", "invalid_request_error"
    )


def _tool_call(i: int, search: dict) -> dict:
    return {
        "id": f"call_search_{i}",
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps({"query": search["query"]})},
    }


def _finish_reason(answer: dict) -> str:
    return "stop" if answer["answer"] is not None else "length"


def _usage(answer: dict) -> dict:
    prompt, completion = answer["prompt_tokens"], answer["completion_tokens"]
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _sleuth_extra(answer: dict) -> dict:
    return {
        "searches": answer["searches"],
        "finish_reason": answer["finish_reason"],
        "agent_cache": answer["cache"],
        "seconds": answer["seconds"],
    }


def _enqueue(agent: PublishedAgent, question: str, body: ChatRequest):
    return agent_chat_enqueue(
        agent,
        question,
        {
            "temperature": body.temperature if body.temperature is not None else 0.0,
            "seed": body.seed or 0,
            "max_tokens": body.max_completion_tokens or body.max_tokens,
        },
    )


def _timed_out() -> ApiError:
    return ApiError(
        504,
        f"No answer within {settings.SLEUTH_INFERENCE_TIMEOUT:.0f} s: the inference workers "
        "are busy or not running. Try again later.",
        "server_error",
        "timeout",
        x_should_retry="false",
    )


def _failed(result) -> ApiError:
    logger.error("agent_chat %s failed: %s", result.id, result.traceback)
    return ApiError(
        500,
        f"The agent could not answer (reference {result.id}).",
        "server_error",
        x_should_retry="false",
    )


def _chat_slot(request) -> chat_slots.Slot:
    """A slot among the chats in flight for the caller's account and the site, or a 429 at
    once (nothing queued, no thread held)."""
    try:
        return chat_slots.acquire(request.user.pk)
    except chat_slots.ChatsInFlight as full:
        if full.full == "site":
            message = (
                f"The service is answering {full.in_flight} chats, its most at once "
                f"({full.cap}). Try again in {full.retry_after} s."
            )
        elif full.full == "process":
            # The client cannot choose its web process: said as the service being busy.
            message = (
                f"This server is answering {full.in_flight} chats, its most at once "
                f"({full.cap}). Try again in {full.retry_after} s."
            )
        else:
            message = (
                f"Your account has {full.in_flight} chats in flight, the most it may have at "
                f"once ({full.cap}). Wait for one to end; try again in {full.retry_after} s."
            )
        raise ApiError(
            429,
            message,
            "rate_limit_error",
            "too_many_chats_in_flight",
            Retry_After=str(full.retry_after),
        ) from None


class _ReleasedWhenDone:
    """A stream that gives its chat slot back when it ends, fails or is closed. The server
    closes every response it sent (Django hands `close` on to it), also one whose stream
    never started: a generator's own `finally` would not run then."""

    def __init__(self, chunks, slot: chat_slots.Slot):
        self.chunks, self.slot = chunks, slot

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self.chunks)
        except BaseException:  # StopIteration too: the stream has ended
            self.slot.release()
            raise

    def close(self):
        try:
            self.chunks.close()
        finally:
            self.slot.release()


@api.post("/chat/completions")
def chat_completions(request, body: ChatRequest):
    agent = _agent_for(request, body.model)
    question = _question(body.messages)
    slot = _chat_slot(request)
    handed_to_stream = False
    try:
        result = _enqueue(agent, question, body)
        completion_id = f"chatcmpl-{uuid.uuid4().hex}"
        created = int(time.time())
        if body.stream:
            include_usage = bool((body.stream_options or {}).get("include_usage"))
            response = StreamingHttpResponse(
                _ReleasedWhenDone(
                    _stream(result, completion_id, created, agent.name, include_usage), slot
                ),
                content_type="text/event-stream",
            )
            handed_to_stream = True
            response["Cache-Control"] = "no-cache"
            response["X-Accel-Buffering"] = "no"  # proxies must not hold the chunks back
            return response
        try:
            answer = result.get(timeout=settings.SLEUTH_INFERENCE_TIMEOUT, propagate=False)
        except ResultTimeout:
            result.revoke()
            raise _timed_out() from None
    finally:
        if not handed_to_stream:
            slot.release()
    if not result.successful():
        raise _failed(result)
    result.forget()
    response = JsonResponse(
        {
            "id": completion_id,
            "object": "chat.completion",
            "created": created,
            "model": agent.name,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": answer["answer"] or "",
                        "tool_calls": [_tool_call(i, s) for i, s in enumerate(answer["searches"])]
                        or None,
                    },
                    "finish_reason": _finish_reason(answer),
                }
            ],
            "usage": _usage(answer),
            "sleuth": _sleuth_extra(answer),
        }
    )
    response["X-Sleuth-Agent-Cache"] = answer["cache"]
    return response


_POLL_SECONDS = 0.05


def _stream(result, completion_id: str, created: int, model: str, include_usage: bool):
    """Server-sent events in OpenAI's chunk format: the role, each search as a tool call
    as soon as the worker reports it, the answer, the finish reason, then [DONE]."""

    def chunk(delta: dict, finish_reason: str | None = None, **extra) -> str:
        body = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n"

    yield chunk({"role": "assistant", "content": ""})
    sent = 0
    deadline = time.monotonic() + settings.SLEUTH_INFERENCE_TIMEOUT
    while True:
        meta = result.backend.get_task_meta(result.id)
        status, info = meta.get("status"), meta.get("result")
        searches = info.get("searches", []) if isinstance(info, dict) else []
        for i in range(sent, len(searches)):
            yield chunk({"tool_calls": [{"index": i, **_tool_call(i, searches[i])}]})
        sent = max(sent, len(searches))
        if status in ("SUCCESS", "FAILURE", "REVOKED"):
            break
        if time.monotonic() > deadline:
            result.revoke()
            yield f"data: {json.dumps({'error': _error_body(_timed_out())})}\n\n"
            yield "data: [DONE]\n\n"
            return
        time.sleep(_POLL_SECONDS)
    if status != "SUCCESS":
        yield f"data: {json.dumps({'error': _error_body(_failed(result))})}\n\n"
        yield "data: [DONE]\n\n"
        return
    answer = info
    result.forget()
    if answer["answer"]:
        yield chunk({"content": answer["answer"]})
    yield chunk({}, _finish_reason(answer), sleuth=_sleuth_extra(answer))
    if include_usage:
        usage = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [],
            "usage": _usage(answer),
        }
        yield f"data: {json.dumps(usage)}\n\n"
    yield "data: [DONE]\n\n"


def _error_body(error: ApiError) -> dict:
    return {"message": error.message, "type": error.kind, "code": error.code}


# Files and fine-tuning jobs (serving.jobs): OpenAI's API over question sets, documents and runs.


def _project(request, project: str | None) -> str | None:
    """The project a request names: a `project` parameter, else the `OpenAI-Project` header."""
    return project or request.headers.get("OpenAI-Project") or None


@api.post("/files")
def files_create(
    request,
    file: File[UploadedFile],
    purpose: str = Form(...),
    project: str | None = Form(None),
):
    # One count with the website's uploads (core.ratelimit.account_throttled).
    window = account_throttled("upload", request.user)
    if window is not None:
        raise _throttled(
            window,
            f"{account_limit_message('upload')} {file.name} was not stored. {retry_words(window)}",
        )
    return jobs.file_create(
        user=request.user,
        file=file,
        purpose=purpose,
        project=_project(request, project or request.GET.get("project")),
    )


@api.get("/files")
def files_list(
    request,
    purpose: str | None = None,
    after: str | None = None,
    limit: int | None = None,
    project: str | None = None,
):
    return jobs.files_list(
        user=request.user,
        project=_project(request, project),
        purpose=purpose,
        after=after,
        limit=limit,
    )


@api.get("/files/{file_id}")
def files_retrieve(request, file_id: str):
    return jobs.file_get(user=request.user, file_id=file_id)


class JobRequest(Schema):
    training_file: str
    model: str = "default"
    hyperparameters: dict | None = None
    method: dict | None = None
    suffix: str | None = None
    validation_file: str | None = None


@api.post("/fine_tuning/jobs")
def fine_tuning_jobs_create(request, body: JobRequest):
    return jobs.job_create(
        user=request.user,
        training_file=body.training_file,
        model=body.model,
        hyperparameters=body.hyperparameters,
        method=body.method,
        suffix=body.suffix,
        validation_file=body.validation_file,
    )


@api.get("/fine_tuning/jobs")
def fine_tuning_jobs_list(
    request, after: str | None = None, limit: int | None = None, project: str | None = None
):
    return jobs.jobs_list(
        user=request.user, project=_project(request, project), after=after, limit=limit
    )


@api.get("/fine_tuning/jobs/{fine_tuning_job_id}")
def fine_tuning_jobs_retrieve(request, fine_tuning_job_id: str):
    return jobs.job_get(user=request.user, job_id=fine_tuning_job_id)


@api.post("/fine_tuning/jobs/{fine_tuning_job_id}/cancel")
def fine_tuning_jobs_cancel(request, fine_tuning_job_id: str):
    return jobs.job_cancel(user=request.user, job_id=fine_tuning_job_id)


@api.get("/fine_tuning/jobs/{fine_tuning_job_id}/events")
def fine_tuning_jobs_events(
    request, fine_tuning_job_id: str, after: str | None = None, limit: int | None = None
):
    return jobs.job_events(user=request.user, job_id=fine_tuning_job_id, after=after, limit=limit)


@api.get("/fine_tuning/jobs/{fine_tuning_job_id}/checkpoints")
def fine_tuning_jobs_checkpoints(
    request, fine_tuning_job_id: str, after: str | None = None, limit: int | None = None
):
    return jobs.job_checkpoints(
        user=request.user, job_id=fine_tuning_job_id, after=after, limit=limit
    )


# Sleuth's own endpoints, where OpenAI's API has no word (serving.rest): projects, their
# documents and question sets, a run's metrics and checkpoint downloads.
api.add_router("", rest.router)
