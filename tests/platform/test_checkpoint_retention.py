"""A run keeps its last checkpoints, its best, its final and published ones; the others leave
the database and the S3 store (real MinIO-compatible server from the test stack)."""

import pytest
from django.conf import settings

from core.s3 import s3_client
from runs.models import Checkpoint, Run
from runs.services import checkpoints_prune

pytestmark = pytest.mark.django_db


def keys_under(prefix: str) -> list[str]:
    listing = s3_client().list_objects_v2(Bucket=settings.S3_ARTIFACTS_BUCKET, Prefix=prefix)
    return [item["Key"] for item in listing.get("Contents", [])]


@pytest.fixture
def run(training_run):
    return training_run


def save(run: Run, step: int, *, recall: float | None = None, **fields) -> Checkpoint:
    prefix = f"projects/{run.project_id}/runs/{run.pk}/checkpoints/step-{step:06d}"
    for name in ("model/model.safetensors", "model/agent.json", "trainer_state.pt"):
        s3_client().put_object(
            Bucket=settings.S3_ARTIFACTS_BUCKET, Key=f"{prefix}/{name}", Body=b"x"
        )
    metrics = {} if recall is None else {"val/answer_score": 0.0, "val/golden_recall": recall}
    return Checkpoint.objects.create(
        run=run, step=step, s3_prefix=prefix, metrics=metrics, **fields
    )


def test_only_the_last_the_best_and_the_published_checkpoints_stay(run):
    save(run, 2, recall=0.2)
    save(run, 4, recall=0.5)  # the best
    save(run, 6, published_prefix="published/6")
    for step in (8, 10, 12, 14):
        save(run, step, recall=0.3)

    deleted = checkpoints_prune(run=run, keep_last=2)

    assert deleted == [2, 8, 10]
    assert list(run.checkpoints.values_list("step", flat=True)) == [4, 6, 12, 14]
    runs_prefix = f"projects/{run.project_id}/runs/{run.pk}/checkpoints/"
    left = {key[len(runs_prefix) :].split("/")[0] for key in keys_under(runs_prefix)}
    assert left == {"step-000004", "step-000006", "step-000012", "step-000014"}


def test_keep_last_zero_keeps_every_checkpoint(run):
    for step in (1, 2, 3):
        save(run, step)
    assert checkpoints_prune(run=run, keep_last=0) == []
    assert run.checkpoints.count() == 3
