"""One API token with many chats in flight while signed-in users browse (issue 68, item 1).

A chat holds a web thread until its answer (or SLEUTH_INFERENCE_TIMEOUT); the web server has
few (`make run` and the image: 2 gunicorn workers x 4 threads). Here one customer's token
keeps --chats chats in flight (half of them streamed), each thread asking again as soon as
its chat ends (after --retry-pause when refused), while --users signed-in users poll their
run pages as bench/load_pages.py does (its users, var/bench-load.json). Against a running
platform, loopback only, for --duration seconds; then the chats still in flight are waited
for (up to --chat-timeout). Prints the pages' latency (p50/p95/p99 per page and overall) and
how the chats were answered: 200, 429 by kind (chats in flight, rate limit), 504 or a
timeout event in the stream, other errors, and hung (no end within --chat-timeout), with
the latency of each.

    PORT=8123 make run &
    .venv/bin/python bench/load_chats.py --base-url http://127.0.0.1:8123 --users 20 \\
        --chats 20 --duration 60
    .venv/bin/python bench/load_chats.py --cleanup   # deletes the chat user (and its token)

The chat user (chat-load@bench.invalid) gets a published agent: a copy of the newest agent
published on this platform (its S3 folders, read only), so the inference worker really
answers; with none published, a stand-in whose folders do not exist (the worker fails each
chat at once: the chats are then 500s). To see chats wait the whole timeout, as with no
inference worker (the compose file's case before issue 68), stop the platform's inference
worker (`celery ... -Q inference`) and start the platform with a short timeout
(SLEUTH_INFERENCE_TIMEOUT=20 make run).

Goal (issue 68.1): pages keep their latency (p99 as without chats) and no page errors; past
SLEUTH_CHATS_IN_FLIGHT_PER_ACCOUNT the token's chats get 429 at once; nothing hangs.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
from load_pages import (  # noqa: E402
    PAGES,
    REPO_ROOT,
    Results,
    User,
    check_base_url,
    percentile,
    platform_env,
)
from load_pages import run_in_django as pages_setup  # noqa: E402

CHAT_EMAIL = "chat-load@bench.invalid"
STAND_IN = "bench-stand-in-agent"
QUESTION = "what was acme revenue in 2021 ?"


# --- set-up, in a child process with the platform's settings --------------------------------


def django_main(action: str, state_path: str) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.utils import timezone

    from corpora.services import project_create
    from runs.models import Checkpoint, Run
    from serving.services import api_token_create

    accounts = get_user_model()
    accounts.objects.filter(email=CHAT_EMAIL).delete()  # its projects, runs and tokens too
    if action == "cleanup":
        Path(state_path).unlink(missing_ok=True)
        print(f"deleted {CHAT_EMAIL} with its agent and tokens", flush=True)
        return
    source = (
        Checkpoint.objects.filter(is_final=True, run__status=Run.Status.SUCCEEDED)
        .exclude(published_prefix="")
        .select_related("run")
        .order_by("-run__finished_at", "-run_id")
        .first()
    )
    user = accounts.objects.create_user(email=CHAT_EMAIL)  # no password: the token only
    project = project_create(owner=user, name="Chat load")
    run = Run.objects.create(
        project=project,
        created_by=user,
        name="chat load",
        status=Run.Status.SUCCEEDED,
        index_prefix=source.run.index_prefix if source else f"bench/{STAND_IN}/index",
        finished_at=timezone.now(),
    )
    published = source.published_prefix if source else f"bench/{STAND_IN}"
    Checkpoint.objects.create(
        run=run, step=1, s3_prefix=f"{published}/unused", is_final=True, published_prefix=published
    )
    _, token = api_token_create(user=user, name="bench load_chats", scopes=["chat"])
    state = {
        "token": token,
        "model": published.rstrip("/").rsplit("/", 1)[-1],
        "agent": "a copy of " + published if source else "a stand-in (no agent is published)",
    }
    Path(state_path).write_text(json.dumps(state, indent=1))
    Path(state_path).chmod(0o600)  # the token
    print(f"created {CHAT_EMAIL} with {state['agent']} and a chat token", flush=True)


def run_in_django(var_dir: Path, action: str, state_path: Path) -> None:
    import subprocess

    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--in-django",
        action,
        str(state_path),
    ]
    subprocess.run(command, env=platform_env(var_dir), cwd=REPO_ROOT, check=True)


# --- the chats ---------------------------------------------------------------------------------


@dataclass
class Chats:
    outcomes: dict[str, list[float]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, outcome: str, seconds: float) -> None:
        with self.lock:
            self.outcomes.setdefault(outcome, []).append(seconds)


def _refusal(response: requests.Response) -> str:
    try:
        code = response.json()["error"].get("code")
    except (ValueError, KeyError, AttributeError):
        code = None
    return f"{response.status_code} {code}" if code else f"{response.status_code}"


def one_chat(http: requests.Session, base: str, state: dict, stream: bool, timeout: float):
    """(outcome, seconds, Retry-After or None) of one chat, read to its end."""
    body = {"model": state["model"], "messages": [{"role": "user", "content": QUESTION}]}
    started = time.perf_counter()
    try:
        with http.post(
            base + "/v1/chat/completions",
            json={**body, "stream": stream},
            headers={"Authorization": f"Bearer {state['token']}"},
            timeout=timeout,
            stream=stream,
        ) as response:
            if response.status_code != 200:
                retry = response.headers.get("Retry-After")
                return _refusal(response), time.perf_counter() - started, retry
            if not stream:
                return "200", time.perf_counter() - started, None
            outcome = "200 (stream)"
            for line in response.iter_lines():
                if time.perf_counter() - started > timeout:
                    return "hung", time.perf_counter() - started, None
                if line.startswith(b"data: {") and b'"error"' in line:
                    error = json.loads(line[6:]).get("error", {})
                    outcome = f"error in stream: {error.get('code') or error.get('type')}"
            return outcome, time.perf_counter() - started, None
    except requests.Timeout:
        return "hung", time.perf_counter() - started, None
    except requests.RequestException as exc:
        return f"error: {type(exc).__name__}", time.perf_counter() - started, None


def keep_chatting(base, state, stream: bool, end: float, args, chats: Chats) -> None:
    http = requests.Session()
    while time.monotonic() < end:
        outcome, seconds, retry = one_chat(http, base, state, stream, args.chat_timeout)
        chats.record(outcome, seconds)
        if outcome.startswith("429"):
            # A client in a hurry: it waits --retry-pause, not the Retry-After it was given.
            time.sleep(args.retry_pause)


# --- report -----------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="loopback only")
    parser.add_argument("--users", type=int, default=20, help="signed-in users on pages")
    parser.add_argument("--chats", type=int, default=20, help="chats in flight, one token")
    parser.add_argument("--duration", type=float, default=60, help="seconds of load")
    parser.add_argument("--revisit", type=float, default=30, help="as in load_pages.py")
    parser.add_argument("--back-to-back", action="store_true", help="pages with no pause")
    parser.add_argument("--timeout", type=float, default=30, help="per page request, seconds")
    parser.add_argument(
        "--chat-timeout",
        type=float,
        default=150,
        help="seconds after which a chat counts as hung (SLEUTH_INFERENCE_TIMEOUT + margin)",
    )
    parser.add_argument("--retry-pause", type=float, default=0.5, help="after a 429, seconds")
    parser.add_argument("--var-dir", type=Path, default=REPO_ROOT / "var")
    parser.add_argument("--setup", action="store_true", help="create the users again first")
    parser.add_argument("--cleanup", action="store_true", help="delete the chat user, stop")
    parser.add_argument("--in-django", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.in_django:
        django_main(*args.in_django)
        return 0
    state_path = args.var_dir / "bench-chats.json"
    if args.cleanup:
        run_in_django(args.var_dir, "cleanup", state_path)
        return 0
    base = check_base_url(args.base_url)
    if args.users < 0 or args.chats < 1 or args.duration <= 0:
        sys.exit("--chats and --duration must be positive, --users at least 0")

    pages_path = args.var_dir / "bench-load.json"
    pages = json.loads(pages_path.read_text()) if pages_path.exists() else {"users": []}
    if args.users and (
        args.setup
        or any("project" not in u for u in pages["users"])
        or len(pages["users"]) < args.users
    ):
        pages_setup(args.var_dir, "setup", str(args.users), str(pages_path))
        pages = json.loads(pages_path.read_text())
    if args.setup or not state_path.exists():
        run_in_django(args.var_dir, "setup", state_path)
    state = json.loads(state_path.read_text())
    models = requests.get(
        base + "/v1/models", headers={"Authorization": f"Bearer {state['token']}"}, timeout=30
    )
    if models.status_code == 429:  # the last run's chats used up the token's minute
        sys.exit(f"{base} answers 429 to the chat token: wait a minute ({models.text[:200]})")
    if models.status_code != 200 or state["model"] not in [m["id"] for m in models.json()["data"]]:
        sys.exit(f"the chat token or its agent is not known at {base}: run again with --setup")

    results, chats = Results(), Chats()
    users = [
        User(base, pages["cookie"], u["session"], u["run"], args, results)
        for u in pages["users"][: args.users]
    ]
    lost = sum(not user.signed_in() for user in users)
    if lost:
        sys.exit(f"{lost} of {len(users)} users are not signed in at {base}: use --setup")

    start = time.monotonic()
    end = start + args.duration
    page_threads = [
        threading.Thread(target=u.drive, args=(start, end, 2.0 * i / len(users)), daemon=True)
        for i, u in enumerate(users)
    ]
    chat_threads = [
        threading.Thread(
            target=keep_chatting, args=(base, state, i % 2 == 1, end, args, chats), daemon=True
        )
        for i in range(args.chats)
    ]
    for thread in chat_threads + page_threads:
        thread.start()
    for thread in page_threads:
        thread.join(timeout=max(0.0, end - time.monotonic()) + args.timeout + 5)
    for thread in chat_threads:  # the chats in flight at the end, to their end
        thread.join(timeout=max(0.0, end - time.monotonic()) + args.chat_timeout + 5)
    still = sum(t.is_alive() for t in chat_threads)
    elapsed = time.monotonic() - start

    print(
        f"\n{args.chats} chats in flight from one token (half streamed; agent: {state['agent']})"
        f", {len(users)} users on pages, {args.duration:g} s of load ({elapsed:.0f} s with the "
        f"last chats), {base}"
    )
    print(f"{'page':<16}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    everything = []
    for page in PAGES:
        values = results.latencies[page]
        everything += values
        if values:
            print(
                f"{page:<16}{len(values):>9}{results.errors[page]:>8}"
                + "".join(f"{1000 * percentile(values, q):>9.0f}" for q in (0.5, 0.95, 0.99))
            )
    page_errors = sum(results.errors.values())
    print(
        f"{'all pages':<16}{len(everything):>9}{page_errors:>8}"
        + "".join(f"{1000 * percentile(everything, q):>9.0f}" for q in (0.5, 0.95, 0.99))
    )
    for message, count in sorted(results.messages.items(), key=lambda m: -m[1])[:10]:
        print(f"page error x{count}: {message}")
    print(f"\n{'chats answered':<36}{'count':>7}{'p50 s':>9}{'p99 s':>9}{'max s':>9}")
    for outcome, seconds in sorted(chats.outcomes.items(), key=lambda o: -len(o[1])):
        print(
            f"{outcome:<36}{len(seconds):>7}"
            + "".join(f"{percentile(seconds, q):>9.2f}" for q in (0.5, 0.99))
            + f"{max(seconds):>9.2f}"
        )
    if still:
        print(f"hung at the end: {still} chat threads had no answer after --chat-timeout")
    hung = len(chats.outcomes.get("hung", [])) + still
    return 1 if page_errors or hung else 0


if __name__ == "__main__":
    sys.exit(main())
