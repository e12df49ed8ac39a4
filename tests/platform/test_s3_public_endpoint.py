"""Presigned downloads name the address browsers reach the store at."""

import urllib.request

from core.s3 import presigned_download_url, s3_client


def test_a_presigned_download_names_the_public_endpoint_and_works_there(settings):
    s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key="public/x.txt", Body=b"hi")
    public = settings.S3_ENDPOINT_URL.replace("127.0.0.1", "localhost")
    settings.S3_PUBLIC_ENDPOINT_URL = public

    url = presigned_download_url(bucket=settings.S3_ARTIFACTS_BUCKET, key="public/x.txt")

    assert url.startswith(public + "/")
    with urllib.request.urlopen(url, timeout=10) as response:  # signed for that host
        assert response.read() == b"hi"


def test_without_a_public_endpoint_downloads_use_the_platforms_own(settings):
    settings.S3_PUBLIC_ENDPOINT_URL = None

    url = presigned_download_url(bucket=settings.S3_ARTIFACTS_BUCKET, key="public/x.txt")

    assert url.startswith(settings.S3_ENDPOINT_URL + "/")
