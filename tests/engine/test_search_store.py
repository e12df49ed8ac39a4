"""Index folders on S3 with a manifest, and the worker-side cache."""

import io
import json
import os
import time
from pathlib import Path

import pytest

from engine.documents.chunking import Chunk
from engine.search.index import SearchIndex
from engine.search.store import IndexCache, upload_index


class FakeS3:
    """The few boto3 client calls the store makes, kept in memory, counting downloads.
    (The end-to-end path against a real S3 server belongs to the platform's tests.)"""

    def __init__(self):
        self.objects: dict[tuple[str, str], bytes] = {}
        self.downloads = 0

    def upload_file(self, filename, bucket, key):
        self.objects[bucket, key] = Path(filename).read_bytes()

    def put_object(self, Bucket, Key, Body):  # noqa: N803 (boto3's names)
        self.objects[Bucket, Key] = Body

    def get_object(self, Bucket, Key):  # noqa: N803
        return {"Body": io.BytesIO(self.objects[Bucket, Key])}

    def download_file(self, bucket, key, filename):
        self.downloads += 1
        Path(filename).write_bytes(self.objects[bucket, key])


@pytest.fixture
def saved(tmp_path):
    chunks = [
        Chunk(id=f"d:p{i}:c0", doc="d", page=i, entity="Acme", text=f"widget {i} revenue")
        for i in range(1, 4)
    ]
    return SearchIndex.build(chunks).save(tmp_path / "idx")


def test_upload_writes_a_manifest_of_every_file(saved):
    s3 = FakeS3()
    manifest = upload_index(s3, "bucket", "corpora/1/index/abc", saved)
    stored = json.loads(s3.objects["bucket", "corpora/1/index/abc/manifest.json"])
    assert stored == manifest and stored["chunk_count"] == 3
    assert {f["path"] for f in stored["files"]} >= {"index.json", "chunks.jsonl"}
    assert all(len(f["sha256"]) == 64 and f["size"] > 0 for f in stored["files"])
    assert stored["build_params"]["k1"] == 1.5


def test_cache_downloads_once_and_reuses(saved, tmp_path):
    s3 = FakeS3()
    upload_index(s3, "bucket", "idx/1", saved)
    cache = IndexCache(s3, "bucket", tmp_path / "cache")
    first = cache.get("idx/1")
    assert first.search("widget 2", k=1)[0].chunk_id == "d:p2:c0"
    downloads = s3.downloads
    assert cache.get("idx/1") is first
    # A new worker process (a new cache object) finds the files already on disk.
    assert len(IndexCache(s3, "bucket", tmp_path / "cache").get("idx/1")) == 3
    assert s3.downloads == downloads


def test_a_corrupt_download_is_refused_and_not_cached(saved, tmp_path):
    s3 = FakeS3()
    manifest = upload_index(s3, "bucket", "idx/1", saved)
    s3.objects["bucket", f"idx/1/{manifest['files_dir']}/chunks.jsonl"] += b"tampered"
    cache = IndexCache(s3, "bucket", tmp_path / "cache")
    with pytest.raises(OSError, match="corrupt"):
        cache.get("idx/1")
    assert not any((tmp_path / "cache").iterdir())


def test_two_builds_of_one_prefix_at_once_leave_a_whole_one(saved, tmp_path):
    """A project's index task and a run's preparation may build the same prefix at once, and
    their files differ in bytes (another process orders the vocabulary otherwise). Whichever
    manifest lands last, a reader gets the files it lists."""
    s3 = FakeS3()
    other = SearchIndex.build(
        [Chunk(id=f"d:p{i}:c0", doc="d", page=i, entity="Acme", text=f"gadget {i}") for i in (1, 2)]
    ).save(tmp_path / "other")
    first = upload_index(s3, "bucket", "idx/1", saved)
    upload_index(s3, "bucket", "idx/1", other)
    # The first build's manifest is written after the second build's files and manifest.
    s3.objects["bucket", "idx/1/manifest.json"] = json.dumps(first).encode()

    index = IndexCache(s3, "bucket", tmp_path / "cache").get("idx/1")

    assert len(index) == 3 and index.search("widget 2", k=1)[0].chunk_id == "d:p2:c0"


def test_an_older_build_without_a_files_folder_still_loads(saved, tmp_path):
    s3 = FakeS3()
    manifest = upload_index(s3, "bucket", "idx/1", saved)
    for key in [k for k in s3.objects if k[1].startswith(f"idx/1/{manifest['files_dir']}/")]:
        s3.objects["bucket", key[1].replace(manifest["files_dir"], "files")] = s3.objects.pop(key)
    del manifest["files_dir"]
    s3.objects["bucket", "idx/1/manifest.json"] = json.dumps(manifest).encode()

    assert len(IndexCache(s3, "bucket", tmp_path / "cache").get("idx/1")) == 3


def test_the_disk_keeps_the_recently_used_copies_up_to_its_limit(saved, tmp_path):
    s3 = FakeS3()
    for n in (1, 2, 3):
        upload_index(s3, "bucket", f"idx/{n}", saved)
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_on_disk=2, min_idle_seconds=60)

    def last_used(prefix: str, seconds_ago: float) -> None:
        then = time.time() - seconds_ago
        os.utime(cache.folder(prefix) / ".complete", (then, then))

    first = cache.get("idx/1")
    cache.get("idx/2")
    last_used("idx/1", 3600)
    last_used("idx/2", 3500)
    cache.get("idx/3")  # a third copy: one over the limit

    assert not cache.folder("idx/1").exists()  # the least recently used goes
    assert cache.folder("idx/2").exists() and cache.folder("idx/3").exists()
    assert cache.get("idx/1") is first  # still loaded in memory
    downloads = s3.downloads
    assert len(IndexCache(s3, "bucket", tmp_path / "cache").get("idx/1")) == 3
    assert s3.downloads > downloads  # a new process downloads it again


def test_a_copy_used_lately_stays_even_over_the_limit(saved, tmp_path):
    s3 = FakeS3()
    for n in (1, 2):
        upload_index(s3, "bucket", f"idx/{n}", saved)
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_on_disk=1, min_idle_seconds=60)

    cache.get("idx/1")
    cache.get("idx/2")  # idx/1 was used a moment ago: another process may be reading it

    assert cache.folder("idx/1").exists() and cache.folder("idx/2").exists()
