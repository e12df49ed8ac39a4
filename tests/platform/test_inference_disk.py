"""An inference worker's disk keeps the published folders it used last, not every one."""

import os
import time

from runs import artifacts
from serving import inference


def test_published_folders_past_the_cap_go_least_recently_used_first(
    tmp_path, monkeypatch, settings
):
    settings.SLEUTH_PUBLISHED_ON_DISK = 2
    monkeypatch.setattr(artifacts, "work_dir", lambda: tmp_path)
    downloads = []

    def download_folder(prefix, target):
        downloads.append(prefix)
        (target / "model.safetensors").write_bytes(b"weights of " + prefix.encode())

    monkeypatch.setattr(artifacts, "download_folder", download_folder)
    long_ago = time.time() - 3600

    def used_long_ago(folder):
        os.utime(folder / ".complete", (long_ago, long_ago))

    first = inference._published_folder("published/run-1")
    second = inference._published_folder("published/run-2")
    used_long_ago(first)
    used_long_ago(second)
    assert inference._published_folder("published/run-1") == first  # used again: now recent
    third = inference._published_folder("published/run-3")

    assert downloads == ["published/run-1", "published/run-2", "published/run-3"]
    assert first.is_dir() and third.is_dir()
    assert not second.exists()  # the least recently used, idle, past the cap of 2
    # A folder used within the idle time is never taken from under a reader.
    fourth = inference._published_folder("published/run-4")
    assert {first.exists(), third.exists(), fourth.exists()} == {True}
