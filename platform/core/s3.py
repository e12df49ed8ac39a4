"""Object storage through boto3: one configured client, the buckets, presigned downloads."""

from functools import lru_cache

import boto3
from botocore.config import Config
from django.conf import settings


@lru_cache(maxsize=4)
def _client(timeout: float):
    return boto3.client(
        "s3",
        endpoint_url=settings.S3_ENDPOINT_URL,
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
    """A short-lived GET URL; `filename` makes the browser save it under that name."""
    params = {"Bucket": bucket, "Key": key}
    if filename:
        params["ResponseContentDisposition"] = f'attachment; filename="{filename}"'
    return s3_client().generate_presigned_url(
        "get_object",
        Params=params,
        ExpiresIn=expires_in or settings.S3_PRESIGNED_TTL_SECONDS,
    )
