"""Object storage through boto3: one configured client, the buckets, presigned downloads, and
the deletion of a project's folder."""

import re
from functools import lru_cache

import boto3
from botocore.config import Config
from django.conf import settings


@lru_cache(maxsize=4)
def _client(timeout: float, endpoint_url: str | None = None):
    return boto3.client(
        "s3",
        endpoint_url=endpoint_url or settings.S3_ENDPOINT_URL,
        aws_access_key_id=settings.S3_ACCESS_KEY_ID,
        aws_secret_access_key=settings.S3_SECRET_ACCESS_KEY,
        region_name=settings.S3_REGION,
        config=Config(
            s3={"addressing_style": "path"},
            signature_version="s3v4",
            connect_timeout=timeout,
            read_timeout=max(timeout, 60),
            retries={"max_attempts": 3, "mode": "standard"},
        ),
    )


def s3_client(*, timeout: float = 5.0):
    return _client(timeout)


def buckets() -> list[str]:
    return [settings.S3_UPLOADS_BUCKET, settings.S3_ARTIFACTS_BUCKET]


def buckets_ensure() -> list[str]:
    """Create the platform's buckets that do not exist yet; return the ones created."""
    client = s3_client()
    existing = {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}
    created = []
    for name in buckets():
        if name not in existing:
            client.create_bucket(Bucket=name)
            created.append(name)
    return created


def presigned_download_url(
    *, bucket: str, key: str, filename: str | None = None, expires_in: int | None = None
) -> str:
    """A short-lived GET URL; `filename` makes the browser save it under that name. Signed
    for `S3_PUBLIC_ENDPOINT_URL` when set: the address customers' browsers reach the store
    at, where the platform's own processes may use an internal one (`http://s3:8333`)."""
    params = {"Bucket": bucket, "Key": key}
    if filename:
        params["ResponseContentDisposition"] = f'attachment; filename="{filename}"'
    return _client(5.0, settings.S3_PUBLIC_ENDPOINT_URL).generate_presigned_url(
        "get_object",
        Params=params,
        ExpiresIn=expires_in or settings.S3_PRESIGNED_TTL_SECONDS,
    )


def is_project_folder(prefix: str) -> bool:
    """Whether `prefix` is one project's folder or a folder in it, ending with "/" (so
    projects/1/ never reaches projects/10/): what may be deleted at once."""
    return re.fullmatch(r"projects/\d+/(.+/)?", prefix) is not None


def delete_s3_prefix(bucket: str, prefix: str) -> int:
    """Delete every object whose key starts with `prefix` (`is_project_folder`)."""
    if not is_project_folder(prefix):
        raise ValueError(f"refusing to delete the broad prefix {prefix!r}")
    client, deleted = s3_client(), 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if keys:
            client.delete_objects(Bucket=bucket, Delete={"Objects": keys, "Quiet": True})
            deleted += len(keys)
    return deleted
