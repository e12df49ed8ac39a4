"""Files go to the real S3-compatible store and come back, also through a presigned URL."""

import urllib.error
import urllib.request
import uuid

import boto3
import pytest
from botocore.exceptions import ClientError
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from core.s3 import presigned_download_url, s3_client


def test_a_file_saved_through_django_storage_reads_back_from_s3():
    name = default_storage.save(f"tests/{uuid.uuid4()}.txt", ContentFile(b"10-K, page 42"))

    with default_storage.open(name) as stored:
        assert stored.read() == b"10-K, page 42"
    head = s3_client().head_object(Bucket=settings.S3_UPLOADS_BUCKET, Key=name)
    assert head["ContentLength"] == len(b"10-K, page 42")


def test_a_presigned_url_downloads_the_object_with_its_filename():
    key = f"checkpoints/{uuid.uuid4()}/model.safetensors"
    s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key, Body=b"weights")

    url = presigned_download_url(
        bucket=settings.S3_ARTIFACTS_BUCKET, key=key, filename="model.safetensors"
    )
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.read() == b"weights"
        assert "model.safetensors" in response.headers["Content-Disposition"]


def test_a_tampered_presigned_url_is_refused():
    key = f"checkpoints/{uuid.uuid4()}.bin"
    s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key, Body=b"x")
    url = presigned_download_url(bucket=settings.S3_ARTIFACTS_BUCKET, key=key)

    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(url.replace(key, key + "-other"), timeout=10)
    assert refused.value.code == 403


def test_the_store_rejects_a_wrong_secret():
    intruder = boto3.client(
        "s3",
        endpoint_url=settings.S3_ENDPOINT_URL,
        aws_access_key_id=settings.S3_ACCESS_KEY_ID,
        aws_secret_access_key="not-the-secret",
        region_name=settings.S3_REGION,
    )
    with pytest.raises(ClientError):
        intruder.list_objects_v2(Bucket=settings.S3_UPLOADS_BUCKET)
