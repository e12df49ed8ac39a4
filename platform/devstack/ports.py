"""Loopback ports: prefer the one we used last time, else any free one."""

import socket


def is_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port(preferred: int | None = None, avoid: set[int] = frozenset()) -> int:
    """Return `preferred` when it is free, else a port the kernel says is free."""
    if preferred and preferred not in avoid and is_free(preferred):
        return preferred
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        # gRPC ports of SeaweedFS sit at +10000; keep room for them.
        if port not in avoid and port + 10000 < 65536 and is_free(port + 10000):
            return port


def wait_for_port(port: int, timeout: float, process=None) -> None:
    """Block until something accepts connections on 127.0.0.1:port."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(
                f"process exited with code {process.returncode} before port {port} opened"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing answered on 127.0.0.1:{port} within {timeout:.0f}s")
