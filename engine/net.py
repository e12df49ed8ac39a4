"""HTTP to addresses a customer typed: public https hosts only, checked when connecting.

A customer's judge endpoint is a URL the platform's own machines call, from the web process
and the workers. Left alone, such a URL reaches whatever those machines can reach: the
cloud's metadata service (169.254.169.254), Redis, Postgres, S3 on the private network.
So a customer URL must be https, name a host with a dot (not a bare service name such as
`redis`), and every address the host resolves to must be public.

Checking the URL once and then letting the HTTP client resolve the name again would let a
DNS server answer "public" to the check and "127.0.0.1" to the connection (DNS rebinding).
`public_http_client` therefore resolves and checks inside the connection pool, at every
connect, and connects to the address it checked; TLS still verifies the certificate against
the host name. Redirects are not followed (a public host could send the client inside),
proxies from the environment are ignored, and refusals say nothing about the network.
"""

import ipaddress
import socket
from urllib.parse import urlsplit

import httpcore2
import httpx2

# Shown to the customer whatever the reason: which check failed, and what the name
# resolved to, would tell an attacker about the network behind the platform.
REFUSED = "Use a public https:// address for the judge endpoint."


class UnsafeURL(ValueError):
    """A URL the platform will not call. `str()` is the generic text; `detail` is for logs."""

    def __init__(self, detail: str) -> None:
        super().__init__(REFUSED)
        self.detail = detail


def resolve(host: str, port: int) -> list[str]:
    """Every address `host` resolves to (a seam for tests that fake DNS)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def is_public(address: str) -> bool:
    """False for loopback, private, link-local, shared (CGNAT), reserved, multicast and
    unspecified addresses, IPv4 ones hidden inside IPv6 included."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone id
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is not None and not is_public(str(embedded)):
            return False
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_unspecified)


def checked_addresses(host: str, port: int, *, allow_private: bool = False) -> list[str]:
    """The addresses of `host`, refused (UnsafeURL) unless every one of them is public."""
    if not allow_private and "." not in host and ":" not in host:
        raise UnsafeURL(f"{host!r} is a bare service name")
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as error:
        raise UnsafeURL(f"{host!r} does not resolve: {error}") from None
    if not addresses:
        raise UnsafeURL(f"{host!r} has no address")
    refused = [a for a in addresses if not is_public(a)]
    if refused and not allow_private:
        raise UnsafeURL(f"{host!r} resolves to non-public {refused}")
    return addresses


def check_url(url: str, *, allow_private: bool = False) -> str:
    """`url` if the platform may call it (checked now, and again at every connect by
    `public_http_client`); UnsafeURL otherwise. `allow_private` is for development and
    tests only: it lets plain http and local servers through."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as error:
        raise UnsafeURL(f"unreadable URL: {error}") from None
    schemes = ("https", "http") if allow_private else ("https",)
    if parts.scheme not in schemes:
        raise UnsafeURL(f"scheme {parts.scheme!r} is not allowed")
    if not host:
        raise UnsafeURL("no host")
    if parts.username or parts.password:
        raise UnsafeURL("credentials in the URL")
    checked_addresses(host, port or 443, allow_private=allow_private)
    return url


class PublicOnlyBackend(httpcore2.SyncBackend):
    """httpcore's network backend, resolving the host itself: every address must pass
    `is_public` and the socket is opened to one of those very addresses."""

    def __init__(self, *, allow_private: bool = False) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            addresses = checked_addresses(host, port, allow_private=self.allow_private)
        except UnsafeURL as error:
            raise httpcore2.ConnectError(str(error)) from error
        last_error: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as error:
                last_error = error
        raise last_error  # type: ignore[misc]  # addresses is never empty


def public_http_client(*, timeout: float = 30.0, allow_private: bool = False) -> httpx2.Client:
    """An httpx client for customer URLs (see the module's docstring)."""
    transport = httpx2.HTTPTransport(trust_env=False)
    # httpx has no public hook for the network backend; its pool keeps one, used for
    # every new connection, so swapping it puts the check in front of every connect.
    transport._pool._network_backend = PublicOnlyBackend(allow_private=allow_private)
    return httpx2.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )
