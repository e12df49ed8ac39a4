"""Request bodies are refused past their URL's limit before they are read or spooled (14.6)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.test import Client, override_settings
from django.test.client import BOUNDARY, MULTIPART_CONTENT, encode_multipart

from corpora.models import QuestionSet
from corpora.services import project_create

pytestmark = pytest.mark.django_db

REPO_ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = b'{"question": "What was revenue?", "answer": "$1 million"}\n'


# A multipart body with a (made-up) CSRF token, then a file whose bytes go on and on.
ENDLESS_FILE_HEAD = (
    f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="csrfmiddlewaretoken"\r\n\r\n'
    f"{'x' * 32}\r\n--{BOUNDARY}\r\n"
    'Content-Disposition: form-data; name="files"; filename="big.pdf"\r\n\r\n'
).encode()


class CountingStream:
    """A request body that records how much of it the server read; endless unless `data`."""

    def __init__(self, data: bytes | None = None, *, prefix: bytes = b""):
        self.data, self.prefix, self.read_bytes = data, prefix, 0

    def read(self, size=-1):
        if self.read_bytes < len(self.prefix):
            end = len(self.prefix) if size is None or size < 0 else self.read_bytes + size
            piece = self.prefix[self.read_bytes : end]
        elif self.data is not None:
            end = len(self.data) if size is None or size < 0 else self.read_bytes + size
            piece = self.data[self.read_bytes : end]
        else:
            piece = b"x" * (size if size and size > 0 else 65536)
        self.read_bytes += len(piece)
        return piece

    def readline(self, size=-1):
        return self.read(size)


def multipart(name: str, content: bytes) -> bytes:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return encode_multipart(BOUNDARY, {"file": SimpleUploadedFile(name, content)})


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


@pytest.fixture
def spool_dir(tmp_path):
    """Every uploaded byte past 0 goes to a file in this folder (Django's temporary uploads)."""
    folder = tmp_path / "spool"
    folder.mkdir()
    with override_settings(FILE_UPLOAD_TEMP_DIR=str(folder), FILE_UPLOAD_MAX_MEMORY_SIZE=0):
        yield folder


def post_stream(client, url, stream, *, length: int | None, **extra):
    environ = {"wsgi.input": stream, "CONTENT_TYPE": MULTIPART_CONTENT, **extra}
    if length is None:
        environ.update({"HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True})
    response = client.generic("POST", url, b"", content_type=MULTIPART_CONTENT, **environ)
    return response


def _declared(client, url, body, length, prefix=b""):
    """A request that says it carries `length` bytes (the client sets the header from data)."""
    stream = CountingStream(body, prefix=prefix)
    return stream, client.generic(
        "POST",
        url,
        b"",
        content_type=MULTIPART_CONTENT,
        **{"wsgi.input": stream, "CONTENT_LENGTH": str(length), "CONTENT_TYPE": MULTIPART_CONTENT},
    )


@override_settings(QUESTION_FILE_MAX_BYTES=10_000)
def test_an_upload_declared_over_the_limit_is_refused_before_a_byte_is_read(
    client, alice, project, spool_dir
):
    client.force_login(alice)
    body = multipart("questions.jsonl", QUESTIONS * 2000)  # ~120 KB, the limit is ~74 KB

    stream, response = _declared(
        client, f"/projects/{project.pk}/question-sets/upload/", body, len(body)
    )

    assert response.status_code == 413
    assert stream.read_bytes == 0
    assert list(spool_dir.iterdir()) == []
    assert not QuestionSet.objects.exists()


@override_settings(QUESTION_FILE_MAX_BYTES=10_000)
def test_a_chunked_upload_is_cut_off_once_it_passes_the_limit(client, alice, project, spool_dir):
    client.force_login(alice)
    endless = CountingStream()

    response = post_stream(
        client, f"/projects/{project.pk}/question-sets/upload/", endless, length=None
    )

    assert response.status_code == 413
    assert endless.read_bytes <= 10_000 + 64 * 1024 + 1
    assert list(spool_dir.iterdir()) == []


def test_anonymous_clients_get_the_small_limit_even_on_upload_urls(project, spool_dir):
    # With a made-up CSRF cookie, the CSRF check parses (and spools) the body to find the token.
    client = Client(enforce_csrf_checks=True)
    client.cookies["csrftoken"] = "x" * 32
    big = 2 * 1024 * 1024
    for url in (f"/projects/{project.pk}/documents/upload/", "/accounts/login/", "/"):
        stream, response = _declared(client, url, None, big, prefix=ENDLESS_FILE_HEAD)
        assert (url, response.status_code, stream.read_bytes) == (url, 413, 0)
    assert list(spool_dir.iterdir()) == []


@override_settings(QUESTION_FILE_MAX_BYTES=10_000)
def test_uploads_within_the_limit_still_work_sized_or_chunked(client, alice, project, spool_dir):
    client.force_login(alice)
    url = f"/projects/{project.pk}/question-sets/upload/"

    sized = client.post(url, {"file": _file("sized.jsonl", QUESTIONS)})
    chunked = post_stream(
        client, url, CountingStream(multipart("chunked.jsonl", QUESTIONS)), length=None
    )

    assert (sized.status_code, chunked.status_code) == (302, 302)
    assert sorted(QuestionSet.objects.values_list("name", flat=True)) == [
        "chunked.jsonl",
        "sized.jsonl",
    ]
    assert list(spool_dir.iterdir()) == []  # Django's temporary files are gone afterwards


def _file(name, content):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


# --- a live gunicorn, spoken to over a raw socket --------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def gunicorn(tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
        "TMPDIR": str(tmp_path),  # where Django would spool an upload
    }
    log = tmp_path / "gunicorn.log"
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application"]
        + ["--bind", f"127.0.0.1:{port}", "--workers", "1", "--timeout", "120"],
        env=env,
        cwd=REPO_ROOT,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, log.read_text()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    if sock.recv(100).startswith(b"HTTP/1.1 200"):
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, log.read_text()
            time.sleep(0.5)
        yield port, tmp_path
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, 9)


def _send_until_answered(port: int, head: bytes, piece: bytes, most: int) -> tuple[bytes, int]:
    """Send `head`, then `piece` after `piece` until the server answers or `most` bytes went."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        answer = b""
        while sent < most:
            try:
                answer += sock.recv(65536)
                if answer:
                    break
            except BlockingIOError:
                pass
            try:
                sent += sock.send(piece)
            except BlockingIOError:
                time.sleep(0.01)
            except (BrokenPipeError, ConnectionResetError):
                break
        sock.settimeout(30)
        try:
            while b"\r\n\r\n" not in answer:
                more = sock.recv(65536)
                if not more:
                    break
                answer += more
        except (ConnectionResetError, TimeoutError):
            pass
    return answer, sent


def test_a_live_server_refuses_a_multi_gigabyte_upload_without_reading_it(gunicorn):
    port, tmp = gunicorn
    head = (
        b"POST /projects/1/documents/upload/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Cookie: csrftoken=" + b"x" * 32 + b"\r\nX-CSRFToken: " + b"x" * 32 + b"\r\n"
        b"Content-Type: multipart/form-data; boundary=zzz\r\n"
        b"Content-Length: 5000000000\r\n\r\n--zzz\r\n"
        b'Content-Disposition: form-data; name="files"; filename="big.pdf"\r\n\r\n'
    )
    answer, sent = _send_until_answered(port, head, b"x" * 65536, 200 * 1024 * 1024)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 64 * 1024 * 1024  # answered long before the body could have been read
    assert [p for p in tmp.rglob("*") if p.is_file() and p.name != "gunicorn.log"] == []


def test_a_live_server_cuts_off_a_chunked_body_past_the_limit(gunicorn):
    port, tmp = gunicorn
    head = (
        b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        b"Content-Type: application/x-www-form-urlencoded\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
    )
    chunk = b"10000\r\n" + b"a" * 65536 + b"\r\n"
    answer, sent = _send_until_answered(port, head, chunk, 200 * 1024 * 1024)

    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 64 * 1024 * 1024
    assert [p for p in tmp.rglob("*") if p.is_file() and p.name != "gunicorn.log"] == []
