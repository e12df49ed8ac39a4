"""Folders on S3 for runs: checkpoints, the final model, published folders, the project index.

Every key lives in the artifacts bucket. A folder is uploaded file by file; whoever
records it (a Checkpoint row, a manifest) does so after the last file, so a reader never
sees a half-uploaded folder as complete.
"""

from pathlib import Path

from django.conf import settings

from core.s3 import s3_client


def bucket() -> str:
    return settings.S3_ARTIFACTS_BUCKET


def run_prefix(run) -> str:
    """The run's own folder: every key the run writes starts with it."""
    return f"projects/{run.project_id}/runs/{run.pk}"


def belongs_to_run(key: str, run) -> bool:
    """Whether `key` is one of the run's own objects (no way out with ".." or "//")."""
    parts = key.split("/")
    return key.startswith(run_prefix(run) + "/") and all(p not in ("", ".", "..") for p in parts)


def work_dir() -> Path:
    """Local scratch space for runs on this worker."""
    path = Path(settings.SLEUTH_WORK_DIR)
    path.mkdir(parents=True, exist_ok=True)
    return path


def upload_folder(local: Path, prefix: str) -> int:
    """Upload every file under `local` to `prefix/…`; returns the bytes uploaded."""
    client, total = s3_client(), 0
    for path in sorted(p for p in Path(local).rglob("*") if p.is_file()):
        client.upload_file(str(path), bucket(), f"{prefix}/{path.relative_to(local).as_posix()}")
        total += path.stat().st_size
    return total


def download_folder(prefix: str, local: Path) -> Path:
    """Download every object under `prefix/` into `local` (same relative paths)."""
    client = s3_client()
    local = Path(local)
    found = False
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket(), Prefix=prefix + "/"
    ):
        for item in page.get("Contents", []):
            target = local / item["Key"][len(prefix) + 1 :]
            target.parent.mkdir(parents=True, exist_ok=True)
            client.download_file(bucket(), item["Key"], str(target))
            found = True
    if not found:
        raise FileNotFoundError(f"nothing on S3 under {prefix}/")
    return local


def delete_folder(prefix: str) -> int:
    """Delete every object under `prefix/`; returns how many."""
    client, deleted = s3_client(), 0
    for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket(), Prefix=prefix + "/"
    ):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket(), Delete={"Objects": keys, "Quiet": True})
            deleted += len(keys)
    return deleted


def exists(key: str) -> bool:
    try:
        s3_client().head_object(Bucket=bucket(), Key=key)
    except s3_client().exceptions.ClientError:
        return False
    return True
