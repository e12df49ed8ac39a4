"""Start the services the environment does not already point at, and say how to reach them.

Set `DATABASE_URL`, `REDIS_URL` or `S3_ENDPOINT_URL` (with `S3_ACCESS_KEY_ID` and
`S3_SECRET_ACCESS_KEY`) to use an external service; nothing is started for it then.
Everything else is started here, with its data under one folder (`var/` for
`make run`, a temporary folder for a test session) so it survives restarts.
"""

import json
import os
import secrets
from collections.abc import Mapping
from pathlib import Path

from .ports import free_port
from .postgres import EmbeddedPostgres
from .redis import EmbeddedRedis
from .s3 import EmbeddedS3

DEFAULT_PORTS = {"postgres": 54329, "redis": 63799, "s3": 18333}


class Stack:
    def __init__(
        self,
        var_dir: Path,
        environ: Mapping[str, str] | None = None,
        log=print,
        default_ports: bool = True,
    ):
        """`default_ports`: try DEFAULT_PORTS first (a developer's stack, found where it was
        last time); off, any free port (test sessions side by side, which would race for them)."""
        self.var_dir = Path(var_dir)
        self.environ = dict(os.environ if environ is None else environ)
        self.log = log
        self.default_ports = default_ports
        self.services: list = []  # started here, stopped in reverse order

    def _state(self) -> dict:
        """Ports and generated S3 credentials, remembered between runs."""
        path = self.var_dir / "stack.json"
        state = json.loads(path.read_text()) if path.exists() else {}
        state.setdefault("ports", {})
        state.setdefault("s3_access_key", "sleuth-" + secrets.token_hex(4))
        state.setdefault("s3_secret_key", secrets.token_urlsafe(24))
        return state

    def _save_state(self, state: dict) -> None:
        path = self.var_dir / "stack.json"
        path.write_text(json.dumps(state, indent=2))
        path.chmod(0o600)

    def start(self) -> dict[str, str]:
        """Start what is missing; return the environment variables that reach every service."""
        self.var_dir.mkdir(parents=True, exist_ok=True)
        state = self._state()
        ports = state["ports"]
        taken: set[int] = set()

        def port_for(name: str) -> int:
            preferred = ports.get(name, DEFAULT_PORTS[name] if self.default_ports else None)
            port = free_port(preferred, avoid=taken)
            taken.update({port, port + 10000})
            ports[name] = port
            return port

        env: dict[str, str] = {}
        try:
            if self.environ.get("DATABASE_URL"):
                self.log("postgres: using DATABASE_URL")
            else:
                postgres = EmbeddedPostgres(self.var_dir / "postgres", port_for("postgres"))
                self._start("postgres", postgres)
                env["DATABASE_URL"] = postgres.url

            if self.environ.get("REDIS_URL"):
                self.log("redis: using REDIS_URL")
            else:
                redis = EmbeddedRedis(self.var_dir / "redis", port_for("redis"))
                self._start("redis", redis)
                env["REDIS_URL"] = redis.url

            if self.environ.get("S3_ENDPOINT_URL"):
                self.log("s3: using S3_ENDPOINT_URL")
            else:
                s3 = EmbeddedS3(
                    self.var_dir / "s3",
                    port_for("s3"),
                    access_key=state["s3_access_key"],
                    secret_key=state["s3_secret_key"],
                )
                self._start("s3", s3)
                env["S3_ENDPOINT_URL"] = s3.url
                env["S3_ACCESS_KEY_ID"] = state["s3_access_key"]
                env["S3_SECRET_ACCESS_KEY"] = state["s3_secret_key"]
        except BaseException:
            self.stop()
            raise
        self._save_state(state)
        return env

    def _start(self, name: str, service) -> None:
        service.start()
        self.services.append(service)
        self.log(f"{name}: started on 127.0.0.1:{service.port} (data in {service_dir(service)})")

    def stop(self) -> None:
        while self.services:
            service = self.services.pop()
            try:
                service.stop()
            except Exception as error:  # keep stopping the others
                self.log(f"could not stop {type(service).__name__}: {error}")


def service_dir(service) -> Path:
    return getattr(service, "home", None) or getattr(service, "root", None) or service.dir
