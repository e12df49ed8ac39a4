"""Index folders on S3 with a manifest, and the per-process cache: on disk, and in memory
bounded by count and (for web processes) by bytes."""

import gc
import io
import json
import os
import time
import tracemalloc
from pathlib import Path

import pytest

from engine.documents.chunking import Chunk
from engine.documents.corpus import build_corpus
from engine.search.index import SearchIndex
from engine.search.store import (
    IndexCache,
    IndexTooLarge,
    estimated_memory,
    purge_copies,
    upload_index,
)

PYTHON_REFERENCE = Path(__file__).resolve().parents[2] / "datasets/python-reference/pages.jsonl.gz"


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


# -- memory: a byte budget beside the count ----------------------------------------------------


def upload_sized(s3, tmp_path, prefix: str, chunks: int) -> int:
    """Upload an index of `chunks` chunks at `prefix`; its estimated memory."""
    built = SearchIndex.build(
        [
            Chunk(id=f"d:p{i}:c0", doc="d", page=i, entity="Acme", text=f"widget {i} " * 20)
            for i in range(chunks)
        ]
    ).save(tmp_path / "built" / prefix)
    return estimated_memory(upload_index(s3, "bucket", prefix, built))


def test_past_the_byte_budget_the_least_recently_used_indexes_go_until_the_new_one_fits(
    tmp_path,
):
    s3 = FakeS3()
    a, b, c = (upload_sized(s3, tmp_path, p, n) for p, n in [("a", 40), ("b", 40), ("c", 80)])
    assert c > a and c > b and a + b + c > a + c
    # a and c fit together; a, b and c do not; the count bound is not what binds.
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_loaded=10, max_memory_bytes=a + c)
    first_a = cache.get("a")
    first_b = cache.get("b")
    assert cache.get("a") is first_a  # used again: b is now the least recently used

    cache.get("c")

    assert cache.loaded() == ["a", "c"]  # b went, not a (loaded first, used last)
    assert cache.loaded_bytes == a + c <= cache.max_memory_bytes
    assert cache.get("a") is first_a
    assert cache.get("b") is not first_b  # loaded again, evicting c (least recently used)
    assert cache.loaded() == ["a", "b"]


def test_a_new_index_evicts_as_many_as_it_needs(tmp_path):
    s3 = FakeS3()
    sizes = {p: upload_sized(s3, tmp_path, p, n) for p, n in [("a", 30), ("b", 30), ("c", 90)]}
    budget = sizes["c"]  # a and b together, or c alone
    assert sizes["a"] + sizes["b"] <= budget
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_memory_bytes=budget)
    cache.get("a")
    cache.get("b")

    cache.get("c")

    assert cache.loaded() == ["c"] and cache.loaded_bytes <= budget


def test_an_index_larger_than_the_whole_budget_is_refused_not_downloaded_nothing_evicted(
    tmp_path,
):
    s3 = FakeS3()
    small = upload_sized(s3, tmp_path, "small", 10)
    large = upload_sized(s3, tmp_path, "large", 200)
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_memory_bytes=large - 1)
    kept = cache.get("small")
    downloads = s3.downloads

    with pytest.raises(IndexTooLarge) as refused:
        cache.get("large")

    assert (refused.value.estimated_bytes, refused.value.budget_bytes) == (large, large - 1)
    assert refused.value.prefix == "large"
    assert s3.downloads == downloads and not cache.folder("large").exists()
    assert cache.loaded() == ["small"] and cache.loaded_bytes == small
    assert cache.get("small") is kept
    # The same index loads where the budget allows it (a worker's cache has none).
    assert len(IndexCache(s3, "bucket", tmp_path / "worker").get("large")) == 200


def test_a_copy_already_on_disk_is_sized_from_its_own_manifest(tmp_path):
    s3 = FakeS3()
    large = upload_sized(s3, tmp_path, "large", 200)
    assert len(IndexCache(s3, "bucket", tmp_path / "cache").get("large")) == 200
    del s3.objects["bucket", "large/manifest.json"]  # S3 is not asked again

    with pytest.raises(IndexTooLarge):
        IndexCache(s3, "bucket", tmp_path / "cache", max_memory_bytes=large - 1).get("large")
    fits = IndexCache(s3, "bucket", tmp_path / "cache", max_memory_bytes=large)
    assert len(fits.get("large")) == 200 and fits.loaded_bytes == large


def test_the_count_bound_still_holds_under_a_large_byte_budget_least_recently_used_first(
    tmp_path,
):
    s3 = FakeS3()
    for prefix in ("a", "b", "c"):
        upload_sized(s3, tmp_path, prefix, 5)
    cache = IndexCache(s3, "bucket", tmp_path / "cache", max_loaded=2, max_memory_bytes=2**40)
    first_a = cache.get("a")
    cache.get("b")
    cache.get("a")

    cache.get("c")

    assert cache.loaded() == ["a", "c"] and cache.get("a") is first_a


def test_the_estimate_covers_what_a_real_index_takes_loaded_and_searched(tmp_path):
    """MEMORY_PER_FILE_BYTE measured: the python-reference corpus's index (many small chunks,
    the worst ratio measured) takes no more memory, once loaded and searched, than the
    cache counts for it."""
    s3 = FakeS3()
    built = SearchIndex.build(build_corpus([PYTHON_REFERENCE]).chunks).save(tmp_path / "idx")
    estimate = estimated_memory(upload_index(s3, "bucket", "py", built))
    queries = ["list comprehension", "[python | tutorial] loops", "what does zip return"]
    warm = SearchIndex.load(built)  # imports and module-level caches are not the index's
    for query in queries:
        warm.search(query, k=5)
    del warm
    gc.collect()

    tracemalloc.start()
    try:
        index = IndexCache(s3, "bucket", tmp_path / "cache").get("py")
        for query in queries:
            index.search(query, k=5)
        gc.collect()
        taken = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()

    assert len(index) > 300
    assert estimate / 3 < taken <= estimate


def test_a_purge_deletes_the_copies_of_what_lay_under_a_folder_and_nothing_else(saved, tmp_path):
    s3 = FakeS3()
    for prefix in ("projects/1/indexes/a", "projects/1/runs/7/index", "projects/10/indexes/a"):
        upload_index(s3, "bucket", prefix, saved)
    cache = IndexCache(s3, "bucket", tmp_path / "cache")
    for prefix in ("projects/1/indexes/a", "projects/1/runs/7/index", "projects/10/indexes/a"):
        cache.get(prefix)
    (tmp_path / "cache" / "not-a-copy").mkdir()

    assert purge_copies(tmp_path / "cache", "projects/1/runs/7/") == 1
    assert purge_copies(tmp_path / "cache", "projects/1/") == 1  # never projects/10/
    assert not cache.folder("projects/1/indexes/a").exists()
    assert (cache.folder("projects/10/indexes/a") / ".complete").is_file()
    assert (tmp_path / "cache" / "not-a-copy").is_dir()
    with pytest.raises(ValueError):
        purge_copies(tmp_path / "cache", "projects/1")  # a folder ends with "/"
