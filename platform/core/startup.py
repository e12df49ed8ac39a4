"""Refuse to start with development defaults where others can reach the process.

Without DJANGO_SETTINGS_MODULE, gunicorn and Celery load `config.settings.local`: DEBUG on
(tracebacks with settings for any visitor) and the public development SECRET_KEY (anyone
can forge sessions and password-reset links, and decrypt the customers' judge keys that
are encrypted with a key derived from it). That is fine on 127.0.0.1, as `make run` binds,
and nowhere else:

- the web server (config/wsgi.py) refuses to serve on a non-loopback address;
- a Celery worker (config/celery.py) refuses to attach to a database or broker that is not
  on this machine.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import urlsplit

from django.core.exceptions import ImproperlyConfigured

# The SECRET_KEY default of config/settings/base.py: public, in the repository.
DEV_SECRET_KEY = "dev-only-insecure-key-change-me"


class InsecureStartup(ImproperlyConfigured):
    """Development defaults on a process others can reach."""


def insecure_defaults(settings) -> list[str]:
    """What makes these settings unfit to face a network: [] when nothing."""
    reasons = []
    if settings.DEBUG:
        reasons.append("DEBUG is on")
    if not settings.SECRET_KEY or settings.SECRET_KEY == DEV_SECRET_KEY:
        reasons.append("SECRET_KEY is the public development key")
    return reasons


def is_loopback(host: str | None) -> bool:
    """Whether `host` (an address or a name) only reaches this machine. Unknown names are
    not: they may resolve anywhere."""
    host = (host or "").strip().strip("[]").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


def check_web_server(addresses: Iterable[str], settings=None) -> None:
    """Raise InsecureStartup when serving any non-loopback address with insecure defaults."""
    settings = settings or _settings()
    exposed = sorted({a for a in addresses if not is_loopback(a)})
    reasons = insecure_defaults(settings)
    if exposed and reasons:
        raise InsecureStartup(
            f"Refusing to serve on {', '.join(exposed)}: {' and '.join(reasons)}. These are "
            "development settings; bind 127.0.0.1, or set DJANGO_SETTINGS_MODULE="
            "config.settings.production with a SECRET_KEY of your own."
        )


def check_worker(settings=None) -> None:
    """Raise InsecureStartup when a worker with insecure defaults attaches to a database or a
    broker on another machine (a worker serves no address; what it reaches is its reach)."""
    settings = settings or _settings()
    database = settings.DATABASES["default"].get("HOST") or "localhost"  # "": a local socket
    broker = urlsplit(settings.CELERY_BROKER_URL or "").hostname or "localhost"
    remote = sorted({host for host in (database, broker) if not is_loopback(host)})
    reasons = insecure_defaults(settings)
    if remote and reasons:
        raise InsecureStartup(
            f"Refusing to start a worker attached to {', '.join(remote)}: "
            f"{' and '.join(reasons)}. These are development settings; set "
            "DJANGO_SETTINGS_MODULE=config.settings.production with a SECRET_KEY of your own."
        )


def serving_addresses(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The addresses this web process serves: the TCP sockets it listens on (a gunicorn
    worker inherits them), and the ones gunicorn's command line binds (a preloading master
    loads the app before it opens its sockets)."""
    argv = sys.argv if argv is None else argv
    environ = os.environ if environ is None else environ
    addresses = listening_addresses()
    if argv and "gunicorn" in os.path.basename(os.path.dirname(argv[0])) + os.path.basename(
        argv[0]
    ):
        addresses += gunicorn_bind_hosts(
            list(argv[1:]) + environ.get("GUNICORN_CMD_ARGS", "").split(), environ
        )
    return addresses


def listening_addresses() -> list[str]:
    """The local addresses of the TCP sockets this process listens on (Linux: /proc)."""
    found = []
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        return found
    for fd in fds:
        try:
            sock = socket.socket(fileno=fd)
        except OSError:
            continue  # not a socket, or already closed
        try:
            if (
                sock.family in (socket.AF_INET, socket.AF_INET6)
                and sock.type == socket.SOCK_STREAM
                and sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
            ):
                found.append(sock.getsockname()[0])
        except OSError:
            pass
        finally:
            sock.detach()  # the descriptor stays open: it is not ours
    return found


def gunicorn_bind_hosts(args: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The hosts of gunicorn's -b/--bind options, or of its default bind when none is given
    (127.0.0.1:8000; 0.0.0.0:$PORT when PORT is set). Unix sockets are local: skipped."""
    binds = []
    tokens = iter(args)
    for token in tokens:
        if token in ("-b", "--bind"):
            binds.append(next(tokens, ""))
        elif token.startswith("--bind="):
            binds.append(token.split("=", 1)[1])
        elif token.startswith("-b") and not token.startswith("--"):
            binds.append(token[2:])
    if not binds:
        binds = [f"0.0.0.0:{environ['PORT']}" if environ.get("PORT") else "127.0.0.1:8000"]
    hosts = []
    for bind in binds:
        if bind.startswith("unix:"):
            continue
        if bind.startswith("fd://"):
            hosts.append(bind)  # an inherited socket: unknown, so not loopback
        elif bind.startswith("["):
            hosts.append(bind[1:].split("]", 1)[0])
        else:
            hosts.append(bind.rsplit(":", 1)[0] if ":" in bind else bind)
    return hosts


def _settings():
    from django.conf import settings

    return settings
