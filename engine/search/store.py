"""Index folders on S3: upload with a manifest, and a per-process cache that downloads
an index once and reuses it, bounded in indexes loaded and, where asked, in bytes.

The boto3 client is injected (the engine never reads Django settings). A prefix holds
one build: `PREFIX/manifest.json`, which lists every file with its size and sha256, the
chunk count and the build parameters, and names the folder of its files,
`PREFIX/files/<build id>/...`. The manifest is written last, so a reader never sees a
manifest whose files are missing; each build writes a folder of its own, so two workers
building the same prefix at once (a project's index task and a run's preparation) cannot
mix their files: whichever manifest lands last names a whole build. (Builds of the same
chunks differ in bytes from one process to another: the vocabulary's order follows
Python's string hashing.) A manifest without a folder (older builds) names `PREFIX/files/`.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from pathlib import Path

from engine.search.index import SearchIndex

MANIFEST = "manifest.json"
# In each local copy, beside `.complete`: the S3 prefix it was copied from, so that the copies
# of objects deleted on S3 (a deleted run's, project's or account's) can be found and purged.
SOURCE = ".source"

# Memory a loaded index takes per byte of its files (what its manifest lists; the same bytes
# lie on local disk after the download), measured on indexes built by `sleuth index`, loaded
# and then searched a few times (the search builds lazy lookups that stay):
#   python-reference, 377 chunks, 0.63 MiB on disk: tracemalloc 2.09x after loading, 2.91x
#     after searches; the RSS of a second copy in a warm process grew by 3.0x;
#   financebench-dev, 16,406 chunks, 40.4 MiB on disk: 1.67x after loading, 1.98x after
#     searches; RSS of a second copy 2.04x.
# The bm25 matrix (numpy arrays) takes in memory what it takes on disk; the chunks' text
# grows from JSON into Python objects, more so for small chunks. 3 takes the higher of the
# ratios, so the budget holds for small and large indexes alike. (The estimate is made from
# the manifest, before anything is downloaded: an index refused costs no disk and no memory.)
MEMORY_PER_FILE_BYTE = 3


class IndexTooLarge(Exception):
    """An index whose estimated memory is more than the cache's whole byte budget: it is
    not loaded (nor downloaded), and nothing loaded is evicted for it."""

    def __init__(self, prefix: str, estimated_bytes: int, budget_bytes: int):
        self.prefix = prefix
        self.estimated_bytes = estimated_bytes
        self.budget_bytes = budget_bytes
        super().__init__(
            f"index {prefix} would take about {estimated_bytes / 2**20:,.0f} MiB loaded, past "
            f"this process's budget of {budget_bytes / 2**20:,.0f} MiB"
        )


def estimated_memory(manifest: dict) -> int:
    """The bytes the build `manifest` describes is expected to take once loaded and searched
    (see MEMORY_PER_FILE_BYTE)."""
    return MEMORY_PER_FILE_BYTE * sum(entry["size"] for entry in manifest["files"])


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(client, bucket: str, prefix: str) -> dict:
    """The manifest of the build at `prefix` (the client's error when it has none yet)."""
    body = client.get_object(Bucket=bucket, Key=f"{prefix}/{MANIFEST}")["Body"].read()
    return json.loads(body)


def file_key(prefix: str, manifest: dict, path: str) -> str:
    """Where the build's file `path` (as its manifest lists it) lies."""
    return f"{prefix}/{manifest.get('files_dir', 'files')}/{path}"


def upload_index(client, bucket: str, prefix: str, directory: str | Path) -> dict:
    """Upload an index folder (as saved by SearchIndex.save) and return its manifest."""
    directory = Path(directory)
    meta = json.loads((directory / "index.json").read_text())
    files_dir = f"files/{secrets.token_hex(8)}"  # this build's own: see the module's doc
    files = []
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        relative = path.relative_to(directory).as_posix()
        files.append({"path": relative, "size": path.stat().st_size, "sha256": _sha256(path)})
        client.upload_file(str(path), bucket, f"{prefix}/{files_dir}/{relative}")
    manifest = {
        "files_dir": files_dir,
        "files": files,
        "chunk_count": meta.get("chunk_count"),
        "build_params": {k: v for k, v in meta.items() if k != "chunk_count"},
    }
    body = json.dumps(manifest, indent=2).encode()
    client.put_object(Bucket=bucket, Key=f"{prefix}/{MANIFEST}", Body=body)
    return manifest


class IndexCache:
    """Loads indexes from S3 on first use, keeps the files on local disk and the loaded
    indexes in memory (prefixes are immutable, so neither ever goes stale).

    Memory holds at most `max_loaded` indexes and, when `max_memory_bytes` is given, at most
    that many bytes of them by their estimate (`estimated_memory`): the least recently used
    go first, before the new one loads, until it fits. An index estimated past the whole
    budget raises IndexTooLarge. An evicted index a request is still searching stays alive
    until that request ends, so a process's memory can pass the budget by the indexes its
    threads are using at once.

    The disk keeps at most `max_on_disk` copies: past that, a new copy deletes the least
    recently used ones not used for `min_idle_seconds` (another process may be reading a
    copy it just used). A project makes a new build at every upload, so without this the
    copies of builds long replaced would fill the worker's disk."""

    def __init__(
        self,
        client,
        bucket: str,
        cache_dir: str | Path,
        max_loaded: int = 4,
        max_on_disk: int = 32,
        min_idle_seconds: float = 600.0,
        max_memory_bytes: int | None = None,
    ):
        self.client = client
        self.bucket = bucket
        self.cache_dir = Path(cache_dir)
        self.max_loaded = max_loaded
        self.max_on_disk = max_on_disk
        self.min_idle_seconds = min_idle_seconds
        self.max_memory_bytes = max_memory_bytes
        # prefix -> (index, estimated bytes), least recently used first
        self._loaded: OrderedDict[str, tuple[SearchIndex, int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, prefix: str) -> SearchIndex:
        with self._lock:
            held = self._loaded.get(prefix)
            if held is not None:
                self._loaded.move_to_end(prefix)
                return held[0]
            manifest = self._manifest(prefix)
            size = estimated_memory(manifest)
            budget = self.max_memory_bytes
            if budget is not None and size > budget:
                raise IndexTooLarge(prefix, size, budget)
            # Evicted before loading, so the process never holds the old and the new at once.
            while self._loaded and (
                len(self._loaded) >= self.max_loaded
                or (budget is not None and self.loaded_bytes + size > budget)
            ):
                self._loaded.popitem(last=False)
            index = SearchIndex.load(self._local_copy(prefix, manifest))
            self._loaded[prefix] = (index, size)
            return index

    @property
    def loaded_bytes(self) -> int:
        """The estimated memory of the indexes loaded now."""
        return sum(size for _, size in self._loaded.values())

    def loaded(self) -> list[str]:
        """The prefixes loaded now, least recently used first."""
        return list(self._loaded)

    def folder(self, prefix: str) -> Path:
        """Where the local copy of `prefix` is (or would be)."""
        return self.cache_dir / hashlib.sha256(f"{self.bucket}/{prefix}".encode()).hexdigest()[:24]

    def _manifest(self, prefix: str) -> dict:
        """The manifest of `prefix`: the local copy's (`.complete` holds it) or S3's."""
        try:
            return json.loads((self.folder(prefix) / ".complete").read_text())
        except (OSError, ValueError):
            return read_manifest(self.client, self.bucket, prefix)

    def _local_copy(self, prefix: str, manifest: dict | None = None) -> Path:
        target = self.folder(prefix)
        if (target / ".complete").is_file():
            os.utime(target / ".complete")  # used now: the last the disk lets go
            return target
        if manifest is None:
            manifest = read_manifest(self.client, self.bucket, prefix)
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=self.cache_dir, prefix=".partial-"))
        try:
            for entry in manifest["files"]:
                path = staging / entry["path"]
                path.parent.mkdir(parents=True, exist_ok=True)
                key = file_key(prefix, manifest, entry["path"])
                self.client.download_file(self.bucket, key, str(path))
                if path.stat().st_size != entry["size"] or _sha256(path) != entry["sha256"]:
                    raise OSError(
                        f"s3://{self.bucket}/{key} is corrupt "
                        "(size or sha256 differs from the manifest)"
                    )
            (staging / SOURCE).write_text(prefix)
            (staging / ".complete").write_text(json.dumps(manifest))
            try:
                os.rename(staging, target)  # atomic: another process may have won the race
            except OSError:
                if not (target / ".complete").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        self._evict(keep=target)
        return target

    def _evict(self, keep: Path) -> None:
        evict_copies(self.cache_dir, keep, self.max_on_disk, self.min_idle_seconds)


def evict_copies(root: Path, keep: Path, max_on_disk: int, min_idle_seconds: float) -> None:
    """Of the complete local copies under `root` (folders holding `.complete`, whose mtime
    says when the copy was last used), delete the least recently used beyond `max_on_disk`:
    never `keep`, never one used in the last `min_idle_seconds` (another process may be
    reading it). Downloads in progress and other files are left alone."""
    used = []
    for folder in root.iterdir():
        try:
            used.append((folder.joinpath(".complete").stat().st_mtime, folder))
        except OSError:
            continue  # a download in progress, or not a copy
    idle_before = time.time() - min_idle_seconds
    for mtime, folder in sorted(used)[: max(0, len(used) - max_on_disk)]:
        if folder != keep and mtime < idle_before:
            shutil.rmtree(folder, ignore_errors=True)


def purge_copies(root: Path, prefix: str) -> int:
    """Delete the local copies under `root` whose source (their SOURCE file) lies under
    `prefix`, a folder ending in "/"; return how many. A process reading one keeps its open
    files; the next use downloads again, which fails once the objects are gone."""
    if not prefix.endswith("/"):
        raise ValueError(f"a purge takes a folder ending in '/', not {prefix!r}")
    purged = 0
    for folder in root.iterdir() if root.is_dir() else ():
        try:
            source = (folder / SOURCE).read_text()
        except OSError:
            continue  # a download in progress, or not a copy
        if (source.rstrip("/") + "/").startswith(prefix):
            shutil.rmtree(folder, ignore_errors=True)
            purged += 1
    return purged
