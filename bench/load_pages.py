"""Load on the pages a signed-in customer keeps open, against a running `make run` (issue 16).

Each of N users has its own project with a run in training (300 metric steps, samples,
events), created through Django's ORM with the platform's own settings (the services in
var/stack.json), and a session made the way the login form makes one (the form itself allows
30 sign-ins per address per 15 minutes, fewer than the users). Each user then opens the
project list and the run page (with its samples and all its metrics), and polls as the page
does: the live part every 2 s, metrics with ?since= every 4 s, samples every 10 s; it opens
the project list and the run page again every --revisit seconds. --back-to-back sends the same
mix with no pause (capacity). Loopback only, for a fixed duration; prints p50/p95/p99 latency
per page, requests/s, errors, the web process's RSS (gunicorn master and workers) at the start
and the end, and what else used the CPU meanwhile (`sleuth train` processes). With
--uploaders N, N of the users also upload a --upload-mb PDF to their project over and over
(the page's own request: one file, CSRF token, JSON answer; each file different, as the
platform refuses a file the project already holds), so the worker parses them meanwhile; the
uploads' own latency is reported apart. Their projects fill up (--cleanup empties them).

    PORT=8123 make run &                       # the platform, on var/
    .venv/bin/python bench/load_pages.py --base-url http://127.0.0.1:8123 --users 50 --duration 60
    .venv/bin/python bench/load_pages.py --base-url http://127.0.0.1:8123 --users 50 \\
        --duration 30 --back-to-back
    .venv/bin/python bench/load_pages.py --base-url http://127.0.0.1:8123 --users 50 \\
        --duration 60 --uploaders 5 --upload-mb 20
    .venv/bin/python bench/load_pages.py --cleanup   # deletes the load users and their runs

The first run (or --setup) creates the users; later runs reuse them (var/bench-load.json).
Goal (issue 16): p99 under 300 ms for pages while a run trains, 0 errors, RSS flat.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import requests

REPO_ROOT = Path(__file__).resolve().parents[1]
EMAIL = "load-{:03d}@bench.invalid"
EMAIL_DOMAIN = "@bench.invalid"
LEASE_OWNER = "bench-load"  # the runs' lease, held far ahead so the sweep leaves them alone
METRIC_STEPS = 300
PAGES = [
    "upload",
    "project list",
    "run page",
    "run live",
    "metrics (full)",
    "metrics ?since",
    "samples",
]


# --- set-up, in a child process with the platform's settings --------------------------------


def platform_env(var_dir: Path) -> dict[str, str]:
    """The environment `make run` gives the platform (platform/devstack), from var/stack.json."""
    state_file = var_dir / "stack.json"
    if not state_file.exists():
        sys.exit(f"{state_file} does not exist: start the platform first (make run)")
    state = json.loads(state_file.read_text())
    ports = state["ports"]
    env = {**os.environ}
    env.setdefault("DATABASE_URL", f"postgres://postgres@127.0.0.1:{ports['postgres']}/sleuth")
    env.setdefault("REDIS_URL", f"redis://127.0.0.1:{ports['redis']}/0")
    if not env.get("S3_ENDPOINT_URL"):
        env["S3_ENDPOINT_URL"] = f"http://127.0.0.1:{ports['s3']}"
        env["S3_ACCESS_KEY_ID"] = state["s3_access_key"]
        env["S3_SECRET_ACCESS_KEY"] = state["s3_secret_key"]
    env["PYTHONPATH"] = os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)])
    env.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    return env


def run_in_django(var_dir: Path, *args: str) -> None:
    command = [sys.executable, str(Path(__file__).resolve()), "--in-django", *args]
    subprocess.run(command, env=platform_env(var_dir), cwd=REPO_ROOT, check=True)


def django_main(action: str, users: int, state_path: str) -> None:
    import django

    django.setup()
    from datetime import timedelta
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import (
        BACKEND_SESSION_KEY,
        HASH_SESSION_KEY,
        SESSION_KEY,
        get_user_model,
    )
    from django.db import transaction
    from django.utils import timezone

    from corpora.services import project_create
    from runs.models import Run, RunEvent, RunMetric, TrajectorySample
    from runs.presets import preset_config

    accounts = get_user_model()
    old = accounts.objects.filter(email__startswith="load-", email__endswith=EMAIL_DOMAIN)
    deleted = old.count()
    old.delete()  # their projects and runs (metrics, samples, events) go with them
    if action == "cleanup":
        Path(state_path).unlink(missing_ok=True)
        print(f"deleted {deleted} load users with their projects and runs", flush=True)
        return

    now = timezone.now()
    config = preset_config("quick-cpu").to_dict()
    store = import_module(settings.SESSION_ENGINE).SessionStore
    out = []
    for i in range(users):
        with transaction.atomic():
            user = accounts.objects.create_user(email=EMAIL.format(i))  # no password: no sign-in
            project = project_create(owner=user, name=f"Load {i:03d}")
            run = Run.objects.create(
                project=project,
                created_by=user,
                name="Capex hunt",
                preset="quick-cpu",
                config=config,
                status=Run.Status.TRAINING,
                current_step=METRIC_STEPS,
                total_steps=2 * METRIC_STEPS,
                started_at=now - timedelta(hours=1),
                progress_at=now,
                lease_owner=LEASE_OWNER,
                lease_expires_at=now + timedelta(days=7),
            )
            RunMetric.objects.bulk_create(
                RunMetric(run=run, step=step, data=_metric(step)) for step in range(1, 301)
            )
            TrajectorySample.objects.bulk_create(
                TrajectorySample(run=run, step=step, question_id=f"q{k}", data=_sample(step, k))
                for step in range(10, METRIC_STEPS + 1, 10)
                for k in range(8)
            )
            RunEvent.objects.bulk_create(
                [
                    RunEvent(run=run, kind="status", status=s, message=f"Run {s}.")
                    for s in ("queued", "preparing", "training")
                ]
                + [
                    RunEvent(run=run, kind="info", message=f"Checkpoint at step {step} saved.")
                    for step in range(20, METRIC_STEPS + 1, 20)
                ]
            )
        session = store()
        session[SESSION_KEY] = user._meta.pk.value_to_string(user)
        session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        out.append(
            {
                "email": user.email,
                "session": session.session_key,
                "run": run.pk,
                "project": project.pk,
            }
        )
    state = {"cookie": settings.SESSION_COOKIE_NAME, "users": out}
    Path(state_path).write_text(json.dumps(state, indent=1))
    Path(state_path).chmod(0o600)  # the sessions sign in as these users
    print(f"created {users} load users, each with a project and a run in training", flush=True)


def _metric(step: int) -> dict:
    x = step / METRIC_STEPS
    data = {"step": step, "reward/total": 0.2 + 0.5 * x, "reward/correctness": 0.1 + 0.6 * x}
    data |= {"reward/conciseness": 0.9, "reward/golden_recall": 0.3 + 0.4 * x}
    data |= {"reward/format": 0.95, "reward/judge_failed": 0.0, "accuracy": 0.1 + 0.5 * x}
    data |= {"golden_recall": 0.3 + 0.4 * x, "searches_per_question": 2.0, "echo_rate": 0.1}
    data |= {"retrieved_chunks": 9.0, "kl_ref": 0.01 * x, "mismatch_kl": 0.001, "entropy": 1.2}
    data |= {"mismatch_abs": 0.02, "masked_share": 0.01, "clip_share": 0.05, "step_s": 12.5}
    data |= {"rollout_s": 9.0, "train_s": 3.5, "loss": 0.5 - 0.3 * x}
    if step % 20 == 0:
        data |= {"val/answer_score": 0.3 + 0.4 * x, "val/golden_recall": 0.5, "val/pass@4": 0.6}
    return data


def _sample(step: int, k: int) -> dict:
    return {
        "question": f"What was 3M's FY2018 capital expenditure? ({k})",
        "searches": [
            {
                "query": "3M 2018 purchases of property plant",
                "chunk_ids": ["3M-p59-c1", "3M-p60-c0"],
            }
        ],
        "answer": "$1,577 million",
        "finish_reason": "answer",
        "reward": {"total": 0.9, "correctness": 1.0, "conciseness": 1.0, "golden_recall": 1.0},
        "text": "<search>3M 2018 purchases of property plant</search><results>…</results>" * 20,
        "golden_chunk_ids": ["3M-p60-c0"],
        "ground_truth": "$1577.00",
    }


# --- the machine: web process RSS, other CPU users -------------------------------------------


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def _pids(match) -> list[str]:
    return [pid for pid in os.listdir("/proc") if pid.isdigit() and match(_cmdline(pid))]


def web_pids(port: int) -> list[str]:
    """gunicorn's master and workers bound to `port` (workers are forks: same command line)."""

    def match(argv: list[str]) -> bool:
        return any("gunicorn" in a for a in argv[:3]) and any(a.endswith(f":{port}") for a in argv)

    return _pids(match)


def training_pids() -> list[str]:
    def match(argv: list[str]) -> bool:
        return len(argv) > 2 and any(a.endswith("/sleuth") for a in argv[:2]) and "train" in argv

    return _pids(match)


def rss_mib(pids: list[str]) -> dict[str, float]:
    out = {}
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out[pid] = int(line.split()[1]) / 1024
        except OSError:
            pass
    return out


def cpu_seconds(pids: list[str]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError):
            pass
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy() -> tuple[int, int]:
    parts = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = parts[3] + parts[4]
    return sum(parts) - idle, sum(parts)


# --- the users --------------------------------------------------------------------------------


@dataclass
class Results:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {p: [] for p in PAGES})
    errors: dict[str, int] = field(default_factory=lambda: {p: 0 for p in PAGES})
    messages: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, page: str, seconds: float, error: str | None) -> None:
        with self.lock:
            self.latencies[page].append(seconds)
            if error:
                self.errors[page] += 1
                self.messages[error] = self.messages.get(error, 0) + 1


class User:
    """One browser tab on a run page: the polls of that page, at its cadence or back to back."""

    def __init__(self, base: str, cookie: str, session: str, run: int, args, results: Results):
        self.base, self.run, self.args, self.results = base, run, args, results
        self.http = requests.Session()
        self.http.cookies.set(cookie, session, domain=urlsplit(base).hostname)
        self.last_step: int | None = None

    def get(self, page: str, path: str, record: bool = True) -> requests.Response | None:
        started = time.perf_counter()
        error, response = None, None
        try:
            response = self.http.get(
                self.base + path, timeout=self.args.timeout, allow_redirects=False
            )
            if response.status_code != 200:
                where = response.headers.get("Location", "")
                error = f"{page}: HTTP {response.status_code}" + (f" to {where}" if where else "")
        except requests.RequestException as exc:
            error = f"{page}: {type(exc).__name__}"
        if record:
            self.results.record(page, time.perf_counter() - started, error)
        return None if error else response

    def upload(self, size: int, project: int) -> None:
        """One document upload as the page's script sends it."""
        if not self.http.cookies.get("csrftoken"):  # the page sets it, once per session
            self.get("upload page", f"/projects/{project}/", record=False)
        token = self.http.cookies.get("csrftoken")
        if not token:
            self.results.record("upload", 0.0, "upload: no project page or CSRF cookie")
            return
        headers = {"X-CSRFToken": token, "Accept": "application/json"}
        started = time.perf_counter()
        error, answer = None, None
        try:
            response = self.http.post(
                f"{self.base}/projects/{project}/documents/upload/",
                files={"files": ("LOAD_2024_filing.pdf", filler_pdf(size), "application/pdf")},
                headers=headers,
                timeout=max(self.args.timeout, 120),
            )
            answer = response.json()["files"][0] if response.status_code == 200 else None
            if answer is None or not answer.get("ok"):
                error = f"upload: HTTP {response.status_code} {response.text[:80]}"
        except (requests.RequestException, ValueError, KeyError) as exc:
            error = f"upload: {type(exc).__name__}"
        self.results.record("upload", time.perf_counter() - started, error)

    def keep_uploading(self, size: int, project: int, end: float) -> None:
        while time.monotonic() < end:
            self.upload(size, project)

    def signed_in(self) -> bool:
        return self.get("project list", "/projects/", record=False) is not None

    def open_pages(self) -> None:
        self.get("project list", "/projects/")
        self.get("run page", f"/runs/{self.run}/")
        self.get("samples", f"/runs/{self.run}/samples/")  # hx-trigger="load"
        self.metrics(full=True)

    def metrics(self, full: bool = False) -> None:
        if full or self.last_step is None:
            response = self.get("metrics (full)", f"/runs/{self.run}/metrics.json")
        else:
            path = f"/runs/{self.run}/metrics.json?since={self.last_step}"
            response = self.get("metrics ?since", path)
        if response is not None:
            try:
                steps = response.json()["steps"]
            except (ValueError, KeyError):
                self.results.record("metrics ?since", 0.0, "metrics: not the expected JSON")
                return
            if steps:
                self.last_step = steps[-1]

    def drive(self, start: float, end: float, phase: float) -> None:
        """Until `end`: the page's timers (htmx every 2 s and 10 s, the chart's 4 s), each
        request when its timer is due, or at once with --back-to-back (the same mix)."""
        a = self.args
        timers = [
            [phase, "open", a.revisit],
            [phase + 2.0, "live", 2.0],
            [phase + 4.0, "metrics", 4.0],
            [phase + 10.0, "samples", 10.0],
        ]
        clock = 0.0  # seconds since start on the page's own timeline
        while True:
            timer = min(timers, key=lambda t: t[0])
            clock = timer[0]
            if not a.back_to_back:
                wait = start + clock - time.monotonic()
                if start + clock >= end:
                    return
                if wait > 0:
                    time.sleep(wait)
            if time.monotonic() >= end:
                return
            what = timer[1]
            if what == "open":
                self.open_pages()
            elif what == "live":
                self.get("run live", f"/runs/{self.run}/live/")
            elif what == "metrics":
                self.metrics()
            else:
                self.get("samples", f"/runs/{self.run}/samples/")
            timer[0] += timer[2]
            if not a.back_to_back:  # a late answer delays the next poll, as a browser's would
                timer[0] = max(timer[0], time.monotonic() - start)


# --- report -----------------------------------------------------------------------------------


def filler_pdf(size: int) -> bytes:
    """A valid one-page PDF of about `size` bytes: the page says a line, an unreferenced
    stream of random bytes (incompressible, as scans are) makes up the size."""
    head = b"%PDF-1.4\n"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        None,  # the page's text
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    text = b"BT /F1 12 Tf 72 720 Td (Load test filing: revenue grew 4%.) Tj ET"
    objects[3] = b"<< /Length %d >>\nstream\n%s\nendstream" % (len(text), text)
    filler = os.urandom(max(0, size - 1024))
    objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(filler), filler))
    out, offsets = bytearray(head), []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)] if ordered else float("nan")


def describe_rss(rss: dict[str, float], master: str | None) -> str:
    workers = [v for pid, v in sorted(rss.items()) if pid != master]
    text = f"{sum(rss.values()):.1f} MiB"
    if master in rss:
        text += f" (master {rss[master]:.1f} + workers " + " + ".join(f"{w:.1f}" for w in workers)
        text += ")"
    return text


def check_base_url(base: str) -> str:
    parts = urlsplit(base)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        sys.exit(f"--base-url must look like http://127.0.0.1:8000, not {base!r}")
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    if not loopback:
        sys.exit(f"refusing {base}: this load test runs against this machine only (loopback)")
    return base.rstrip("/")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--base-url", default="http://127.0.0.1:8000", help="loopback only")
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--duration", type=float, default=60, help="seconds of load")
    parser.add_argument("--back-to-back", action="store_true", help="no pause: capacity")
    parser.add_argument(
        "--revisit", type=float, default=30, help="seconds between openings of the pages"
    )
    parser.add_argument("--timeout", type=float, default=30, help="per request, seconds")
    parser.add_argument("--uploaders", type=int, default=0, help="users that also upload")
    parser.add_argument("--upload-mb", type=float, default=20, help="size of each upload")
    parser.add_argument("--var-dir", type=Path, default=REPO_ROOT / "var")
    parser.add_argument("--setup", action="store_true", help="create the users again first")
    parser.add_argument("--cleanup", action="store_true", help="delete the load users, stop")
    parser.add_argument("--in-django", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.in_django:
        action, users, state_path = args.in_django
        django_main(action, int(users), state_path)
        return 0

    state_path = args.var_dir / "bench-load.json"
    if args.cleanup:
        run_in_django(args.var_dir, "cleanup", "0", str(state_path))
        return 0
    base = check_base_url(args.base_url)
    port = urlsplit(base).port or (443 if base.startswith("https") else 80)
    if args.users < 1 or args.duration <= 0:
        sys.exit("--users and --duration must be positive")

    state = json.loads(state_path.read_text()) if state_path.exists() else {"users": []}
    stale = any("project" not in u for u in state["users"])
    if args.setup or stale or len(state["users"]) < args.users:
        run_in_django(args.var_dir, "setup", str(args.users), str(state_path))
        state = json.loads(state_path.read_text())

    results = Results()
    users = [
        User(base, state["cookie"], u["session"], u["run"], args, results)
        for u in state["users"][: args.users]
    ]
    lost = sum(not user.signed_in() for user in users)
    if lost:
        sys.exit(
            f"{lost} of {len(users)} users are not signed in at {base} (another var/, or the "
            "database was reset): run again with --setup"
        )

    web = web_pids(port)
    master = min(web, key=int) if web else None
    rss_start = rss_mib(web)
    trainers = training_pids()
    train_cpu, busy, load = cpu_seconds(trainers), machine_busy(), os.getloadavg()[0]
    web_cpu, client_cpu = cpu_seconds(web), sum(os.times()[:2])
    start = time.monotonic()
    end = start + args.duration
    threads = [
        threading.Thread(target=user.drive, args=(start, end, 2.0 * i / len(users)), daemon=True)
        for i, user in enumerate(users)
    ]
    size = int(args.upload_mb * 2**20)
    threads += [
        threading.Thread(target=user.keep_uploading, args=(size, u["project"], end), daemon=True)
        for user, u in zip(users[: args.uploaders], state["users"], strict=False)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, end - time.monotonic()) + args.timeout + 5)
    elapsed = max(time.monotonic() - start, args.duration)
    busy_end, train_cpu_end = machine_busy(), cpu_seconds(trainers)
    web_cpu, client_cpu = cpu_seconds(web) - web_cpu, sum(os.times()[:2]) - client_cpu
    rss_end = rss_mib(web)

    mode = (
        "back to back (no pause)"
        if args.back_to_back
        else "at the pages' polling cadence (live 2 s, metrics ?since 4 s, samples 10 s"
        f", project list and run page every {args.revisit:g} s)"
    )
    print(f"\n{len(users)} users, {mode}, {args.duration:g} s, {base}")
    cpus = os.cpu_count() or 1
    machine = 100 * (busy_end[0] - busy[0]) / max(1, busy_end[1] - busy[1])
    print(
        f"machine: {cpus} CPUs, {machine:.0f}% busy during the load, load average "
        f"{load:.1f} -> {os.getloadavg()[0]:.1f}; `sleuth train` processes: {len(trainers)}"
        + (f", using {(train_cpu_end - train_cpu) / elapsed:.2f} CPUs" if trainers else "")
        + f"; web {web_cpu / elapsed:.2f} CPUs, this client {client_cpu / elapsed:.2f} CPUs"
    )
    print(f"{'page':<16}{'requests':>9}{'errors':>8}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}")
    everything = []
    for page in PAGES:
        values = results.latencies[page]
        if page != "upload":  # the pages' figures; uploads are reported on their own line
            everything += values
        if values:
            print(
                f"{page:<16}{len(values):>9}{results.errors[page]:>8}"
                + "".join(f"{1000 * percentile(values, q):>9.0f}" for q in (0.5, 0.95, 0.99))
            )
    errors = sum(results.errors.values())
    print(
        f"{'all pages':<16}{len(everything):>9}{errors - results.errors['upload']:>8}"
        + "".join(f"{1000 * percentile(everything, q):>9.0f}" for q in (0.5, 0.95, 0.99))
    )
    print(f"throughput: {len(everything) / elapsed:.1f} requests/s over {elapsed:.1f} s")
    if web:
        print(f"web RSS (gunicorn, port {port}): start {describe_rss(rss_start, master)}")
        print(f"                             end   {describe_rss(rss_end, master)}")
        if set(rss_end) != set(rss_start):
            print("  (the set of gunicorn processes changed: a worker restarted)")
    else:
        print(f"web RSS: no gunicorn process bound to port {port} found on this machine")
    for message, count in sorted(results.messages.items(), key=lambda m: -m[1])[:10]:
        print(f"error x{count}: {message}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
