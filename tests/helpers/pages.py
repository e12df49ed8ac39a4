"""A run as a worker would have left it, for the run pages' tests
(tests/platform/test_run_pages.py, test_pages_bounded.py, tests/browser/test_runs.py,
test_run_charts_incremental.py)."""

from django.conf import settings

from core.s3 import s3_client
from runs.models import Checkpoint, Run, RunEvent, RunMetric, TrajectorySample
from runs.presets import preset_config

EVAL_REPORT = {
    "policies": {
        "echo": {
            "answer_score": 0.1,
            "golden_recall": 0.15,
            "pass@k": 0.1,
            "searches_per_question": 1.0,
            "retrieved_chunks": 5.0,
            "echo_rate": 1.0,
            "answer_tokens": 12.0,
            "p50_s": 0.01,
            "p95_s": 0.02,
            "n": 20,
        },
        "runs/7/final": {
            "answer_score": 0.45,
            "golden_recall": 0.6,
            "pass@k": 0.55,
            "searches_per_question": 2.5,
            "searches_after_miss": 3.4,
            "retrieved_chunks": 9.0,
            "echo_rate": 0.1,
            "answer_tokens": 9.0,
            "p50_s": 1.2,
            "p95_s": 2.5,
            "n": 20,
        },
    }
}


SAMPLE = {
    "question": "What was 3M's FY2018 capital expenditure?",
    "searches": [
        {"query": "3M 2018 purchases of property plant", "chunk_ids": ["3M-p59-c1", "3M-p60-c0"]},
        {"query": "", "chunk_ids": [], "malformed": True},
    ],
    "answer": "$1,577 million",
    "finish_reason": "answer",
    "reward": {
        "total": 0.9,
        "correctness": 1.0,
        "conciseness": 1.0,
        "golden_recall": 1.0,
        "format": 0.75,
        "judge_failed": 0.0,
    },
    "text": "<search>3M 2018 purchases of property plant</search><results>…</results>",
    "golden_chunk_ids": ["3M-p60-c0"],
    "ground_truth": "$1577.00",
}


def make_run(project, *, status=Run.Status.TRAINING, archive=True) -> Run:
    """A run in the middle of training, with what a worker would have written so far."""
    config = preset_config("quick-cpu")
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="First try",
        preset="quick-cpu",
        config=config.to_dict(),
        status=status,
        current_step=2,
        total_steps=4,
        eval_report=EVAL_REPORT,
    )
    RunEvent.objects.create(run=run, kind="status", status="training", message="Training started.")
    for step in (1, 2):
        data = {"step": step, "reward/total": 0.2 * step, "reward/correctness": 0.1 * step}
        if step == 2:
            data |= {"val/accuracy": 0.5, "val/pass@4": 0.75}
        RunMetric.objects.create(run=run, step=step, data=data)
    TrajectorySample.objects.create(run=run, step=2, question_id="q1", data=SAMPLE)
    key = f"projects/{project.pk}/runs/{run.pk}/checkpoints/step-2.tar.gz"
    if archive:
        s3_client().put_object(Bucket=settings.S3_ARTIFACTS_BUCKET, Key=key, Body=b"weights")
    Checkpoint.objects.create(
        run=run,
        step=2,
        s3_prefix=key.removesuffix(".tar.gz"),
        metrics={"val/accuracy": 0.5, "val/golden_recall": 0.6, "val/pass@4": 0.75},
        archive_key=key if archive else "",
        size_bytes=7,
    )
    return run


def page(response) -> str:
    return response.content.decode()


def step_done(run: Run, step: int, *, reward: float) -> None:
    """What the training task writes after each step."""
    RunMetric.objects.create(
        run=run,
        step=step,
        data={
            "step": step,
            "reward/total": reward,
            "reward/correctness": reward,
            "reward/golden_recall": 0.5,
            "accuracy": reward,
            "golden_recall": 0.5,
            "searches_per_question": 1.5,
            "mismatch_abs": 0.01,
            "mismatch_kl": 0.001,
            "entropy": 1.2,
            "step_s": 20.0,
        },
    )
    TrajectorySample.objects.create(
        run=run,
        step=step,
        question_id="q1",
        data={
            "question": "What is Adobe's FY2022 operating margin?",
            "searches": [
                {
                    "query": "Adobe 2022 operating income",
                    "chunk_ids": ["ADBE-p54-c2", "ADBE-p12-c0"],
                }
            ],
            "answer": "34.6%",
            "finish_reason": "answer",
            "reward": {"total": reward, "correctness": 1.0, "golden_recall": 1.0, "format": 1.0},
            "golden_chunk_ids": ["ADBE-p54-c2"],
            "ground_truth": "34.6%",
            "text": "<search>Adobe 2022 operating income</search>",
        },
    )
    Run.objects.filter(pk=run.pk).update(current_step=step)
    RunEvent.objects.create(run=run, message=f"Step {step} done: reward {reward:.2f}.")
