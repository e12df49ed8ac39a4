"""Request bodies have a size limit per URL, enforced before Django reads them (issue 14.6).

Django parses a POST body as soon as anything reads `request.POST` (the CSRF check does,
before the view checks who is asking) and spools uploaded files to disk past
FILE_UPLOAD_MAX_MEMORY_SIZE, so an anonymous client could stream gigabytes onto the web
server's disk. This middleware answers 413 first:

- a body whose Content-Length is over the limit is refused without reading a byte of it;
- a chunked body (no Content-Length; gunicorn decodes it and marks `wsgi.input_terminated`)
  is read here up to the limit and refused as soon as one byte more arrives; a body within
  the limit is handed on like a sized one (Django reads nothing of a body without
  Content-Length otherwise).

The limit is the upload limit on the upload URLs, for signed-in users only, and
REQUEST_BODY_MAX_BYTES everywhere else and for everyone else. An app whose clients sign in
otherwise (the /v1 API's bearer tokens) registers its upload URL with `upload_view`, saying
how much it takes and how to tell a client that may send it.
"""

import tempfile
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.defaultfilters import filesizeformat
from django.urls import Resolver404, resolve

# Room for the multipart framing around the files: boundaries, part headers, the CSRF field.
MULTIPART_ALLOWANCE = 64 * 1024
_READ_SIZE = 64 * 1024
_BODYLESS = {"GET", "HEAD", "OPTIONS", "TRACE"}


def _upload_limits() -> dict[str, int]:
    """Upload URLs (by view name) and the most bytes of files one request to them may carry."""
    return {
        # The page's script sends one file per request; without JavaScript the form sends
        # every chosen file in one request, up to DOCUMENT_POST_MAX_BYTES together.
        "corpora:document_upload": max(
            settings.DOCUMENT_MAX_BYTES, settings.DOCUMENT_POST_MAX_BYTES
        ),
        "corpora:question_set_upload": settings.QUESTION_FILE_MAX_BYTES,
    }


@dataclass(frozen=True)
class _RegisteredUpload:
    max_bytes: Callable[[], int]
    authenticated: Callable[[HttpRequest], bool]


_registered_uploads: dict[str, _RegisteredUpload] = {}


def upload_view(
    view_name: str, *, max_bytes: Callable[[], int], authenticated: Callable[[HttpRequest], bool]
) -> None:
    """Let `view_name` take up to `max_bytes()` of files from a request that `authenticated`
    accepts (called from an app's `ready()`: core imports no app above it)."""
    _registered_uploads[view_name] = _RegisteredUpload(max_bytes, authenticated)


def request_body_limit(request: HttpRequest) -> int:
    """The most bytes of body this request may send."""
    small = settings.REQUEST_BODY_MAX_BYTES
    try:
        view_name = resolve(request.path_info).view_name
    except Resolver404:
        return small
    registered = _registered_uploads.get(view_name)
    if registered is not None:
        if not registered.authenticated(request):
            return small
        return registered.max_bytes() + MULTIPART_ALLOWANCE
    upload = _upload_limits().get(view_name)
    if upload is None or not request.user.is_authenticated:
        return small
    return upload + MULTIPART_ALLOWANCE


def _too_large(request: HttpRequest, limit: int) -> HttpResponse:
    text = f"The request is too large: at most {filesizeformat(limit)} may be sent here."
    if request.headers.get("Accept") == "application/json":
        return JsonResponse({"error": text}, status=413)
    return HttpResponse(text, status=413, content_type="text/plain; charset=utf-8")


class _BodyTooLarge(Exception):
    pass


def _spool_chunked_body(request: HttpRequest, limit: int):
    """Read a body of unknown length into a temporary file, refusing it past `limit`."""
    stream = request.META["wsgi.input"]
    spool = tempfile.SpooledTemporaryFile(  # to disk past the size Django keeps in memory
        max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE or 1, dir=settings.FILE_UPLOAD_TEMP_DIR
    )
    size = 0
    try:
        while True:
            piece = stream.read(min(_READ_SIZE, limit + 1 - size))
            if not piece:
                break
            size += len(piece)
            if size > limit:
                raise _BodyTooLarge
            spool.write(piece)
    except BaseException:
        spool.close()  # deletes what was written
        raise
    spool.seek(0)
    return spool, size


class RequestBodyLimitMiddleware:
    """Place after AuthenticationMiddleware (the upload limit is for signed-in users)."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest):
        if request.method in _BODYLESS:
            return self.get_response(request)
        limit = request_body_limit(request)
        declared = request.META.get("CONTENT_LENGTH")
        if declared:
            try:
                length = int(declared)
            except ValueError:
                length = 0  # Django reads nothing of a body with an unreadable length
            if length > limit:
                return _too_large(request, limit)
            return self.get_response(request)
        chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not (chunked and request.META.get("wsgi.input_terminated")):
            return self.get_response(request)
        try:
            spool, size = _spool_chunked_body(request, limit)
        except _BodyTooLarge:
            return _too_large(request, limit)
        try:
            request.META["CONTENT_LENGTH"] = str(size)
            request._stream = LimitedStream(spool, size)
            return self.get_response(request)
        finally:
            spool.close()
