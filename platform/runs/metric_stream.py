"""A training run's metric stream into Postgres, and its resume from the last checkpoint.

Steps and sample trajectories are buffered and written in batches, upserted by (run, step),
so a step logged again after a resume replaces its first record instead of adding one.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from django.db import transaction

from engine.documents.chunking import clean_text

from . import artifacts
from .lease import fenced
from .models import Run, RunMetric, TrajectorySample
from .stage import ride_out

METRICS_BATCH = 10  # steps buffered before one bulk INSERT (also flushed at checkpoints)
METRICS_FLUSH_SECONDS = 5.0


def jsonb_safe(value):
    """`value` as Postgres's jsonb takes it: strings without NUL (model output and retrieved
    text may carry one), NaN and infinities as null (JSON has no such numbers)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {clean_text(str(k)): jsonb_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonb_safe(v) for v in value]
    return value


class MetricStream:
    """Buffers step records and sample trajectories; writes them in batches (one bulk
    INSERT per table), upserting by (run, step) so a replayed step never duplicates. With
    an `owner`, a batch commits only while that worker holds the run's lease (LeaseLost)."""

    def __init__(self, run: Run, owner: str | None = None):
        self.run = run
        self.owner = owner
        self.records: list[dict] = []
        self.samples: list[dict] = []
        self.flushed_at = time.monotonic()

    def add(self, record: dict, samples: list[dict]) -> None:
        self.records.append(record)
        self.samples.extend(samples)
        if (
            len(self.records) >= METRICS_BATCH
            or time.monotonic() - self.flushed_at > METRICS_FLUSH_SECONDS
        ):
            self.flush()

    def flush(self) -> None:
        if self.records:  # a database restart is waited out (ride_out): no step lost
            ride_out(self._write, f"run {self.run.pk}: writing metrics")
        self.records, self.samples = [], []
        self.flushed_at = time.monotonic()

    def _write(self) -> None:
        guard = transaction.atomic() if self.owner is None else fenced(self.run.pk, self.owner)
        with guard:
            RunMetric.objects.bulk_create(
                [RunMetric(run=self.run, step=r["step"], data=jsonb_safe(r)) for r in self.records],
                update_conflicts=True,
                unique_fields=["run", "step"],
                update_fields=["data"],
            )
            steps = sorted({s["step"] for s in self.samples})
            TrajectorySample.objects.filter(run=self.run, step__in=steps).delete()
            TrajectorySample.objects.bulk_create(
                TrajectorySample(
                    run=self.run,
                    step=s["step"],
                    question_id=clean_text(str(s["question_id"])),
                    data=jsonb_safe(s),
                )
                for s in self.samples
            )
            Run.objects.filter(pk=self.run.pk).update(current_step=self.records[-1]["step"])


def restore_checkpoint(run: Run, out_dir: Path, owner: str) -> int:
    """Download the run's latest complete checkpoint into out_dir and drop the metrics and
    samples logged after it (the trainer logs those steps again). Returns its step."""
    checkpoint = run.checkpoints.filter(is_final=False).order_by("-step").first()
    step = checkpoint.step if checkpoint else 0
    if checkpoint:
        artifacts.download_folder(
            checkpoint.s3_prefix, out_dir / "checkpoints" / f"step-{checkpoint.step:06d}"
        )
    with fenced(run.pk, owner):
        RunMetric.objects.filter(run=run, step__gt=step).delete()
        TrajectorySample.objects.filter(run=run, step__gt=step).delete()
    return step
