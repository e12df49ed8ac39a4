"""Services restarted in the middle of a training run (issue 16, "faults to run"): Postgres,
Redis and the S3 store are each stopped while a tiny run trains on a real Celery worker,
kept down long enough that the run must meet the outage, and started again on the same
port and data folder. The run must end succeeded with every metric step exactly once and
its final checkpoint at the last step; a step trained again after a resume (from the last
checkpoint on S3) is counted from the worker's step journal (step_journal_worker.py).

Before runs.stage's `ride_out`, a Postgres or S3 restart failed the training stage at
its next write and the run resumed from its last checkpoint, training up to SAVE_EVERY
steps again; now the writes wait for the service and no step is trained twice. Postgres
stays down longer than the worker's lease: before runs.sweep's grace after a database
start, the sweep could take the lapsed lease before the worker renewed it (CI met that).

Times are measured and printed (`-s`), never asserted: time to recover is from the service
answering again to the run's next progress (a step trained, or the next stage claimed),
and the table at the end of the module collects them. The stack is the session's: each
restart ends with the service answering, for the tests that follow (service_faults.py)."""

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from service_faults import ServiceFaults

from corpora.services import project_create
from runs.models import Checkpoint, Run, RunMetric
from runs.services import run_create
from tests.helpers.runs import TINY_OPTIONS, finished, upload_corpus, upload_questions
from tests.helpers.toy import tiny_model_folder

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REPO_ROOT = Path(__file__).resolve().parents[2]
# Queues of their own, so only this module's worker trains these runs.
QUEUES = {"SLEUTH_INGEST_QUEUE": "ingest-restarts", "SLEUTH_TRAIN_QUEUE": "train-restarts"}
# Short leases, as a fault test wants: a lease left by a failed stage lapses in seconds.
LEASE_SECONDS = 6
LEASE = {"SLEUTH_RUN_LEASE_SECONDS": str(LEASE_SECONDS), "SLEUTH_RUN_SWEEP_SECONDS": "2"}
STEPS, SAVE_EVERY = 30, 3
STEP_SECONDS = "0.25"  # each step at least (the worker sleeps): restarts land mid-training
# Generous: a loaded 2-core box may be slow; nothing here is timed against a limit.
WAIT_SECONDS = 300
OUTAGE_CAP_SECONDS = 90  # the longest a service stays down waiting for the run to meet it
DOWN_SECONDS = 3  # the shortest: a restart, not a blink


def start_worker(tmp: Path, model: str) -> subprocess.Popen:
    from django.db import connection

    database = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/" + connection.settings_dict["NAME"]
    env = {
        **os.environ,
        **QUEUES,
        **LEASE,
        "SLEUTH_ALLOWED_MODELS": f"default,{model}",  # the worker checks it again
        "SLEUTH_TEST_STEP_JOURNAL": str(tmp / "steps.jsonl"),
        "SLEUTH_TEST_STEP_SECONDS": STEP_SECONDS,
        "DATABASE_URL": database,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "PYTHONUNBUFFERED": "1",
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "platform"), str(REPO_ROOT)]),
    }
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("step_journal_worker.py"))]
        + ["-A", "config", "worker", "--pool", "solo", "-Q", ",".join(QUEUES.values())]
        + ["-n", f"restarts-{os.getpid()}@%h", "-l", "INFO"],
        env=env,
        cwd=REPO_ROOT,
        stdout=(tmp / "worker.log").open("ab"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


class Trainer:
    """The module's worker process, its log and its step journal."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.model = tiny_model_folder(folder)
        self.process = start_worker(folder, self.model)

    @property
    def log(self) -> str:
        return (self.folder / "worker.log").read_text(errors="replace")

    def steps(self, run: Run) -> list[dict]:
        """Every step the worker trained for `run`, in order (a retrained step twice)."""
        path = self.folder / "steps.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [entry for entry in map(json.loads, lines) if entry["run"] == run.pk]

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@pytest.fixture(scope="module")
def trainer(tmp_path_factory, django_db_blocker, celery_worker):
    with django_db_blocker.unblock():
        trainer = Trainer(tmp_path_factory.mktemp("restarts"))
    yield trainer
    trainer.stop()


@pytest.fixture(scope="module")
def figures():
    """What each fault did, printed as one table when the module ends."""
    rows: list[dict] = []
    yield rows
    print("\n\nservice restarts mid-run:")
    for row in rows:
        print("  " + " | ".join(f"{key} {value}" for key, value in row.items()))


@pytest.fixture
def faults(request) -> ServiceFaults:
    return ServiceFaults.for_session(request.config)


@pytest.fixture
def start_run(trainer, alice, knob, settings):
    settings.SLEUTH_ALLOWED_MODELS = ["default", trainer.model]
    for key, value in QUEUES.items():
        knob(key, value)

    def start(name: str) -> Run:
        project = project_create(owner=alice, name="Toy filings")
        upload_corpus(project)  # parsed by the suite's worker, on the usual ingest queue
        return run_create(
            project=project,
            user=alice,
            name=name,
            question_set=upload_questions(project),
            preset="quick-cpu",
            options={
                **TINY_OPTIONS,
                "steps": STEPS,
                "save_every": SAVE_EVERY,
                "hold_back_after": 10_000,  # a random model never answers: keep asking
                "model": trainer.model,
            },
        )

    return start


def wait_for(condition, timeout: float, what):
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        assert time.monotonic() < deadline, what()
        time.sleep(0.2)
    return result


def training_with_a_checkpoint(run: Run, trainer: Trainer) -> int:
    """Wait until the run trains and has a checkpoint on S3; return its step."""

    def checkpointed():
        run.refresh_from_db()
        assert run.status not in Run.FINISHED, (run.status, run.status_reason, trainer.log[-3000:])
        step = run.checkpoints.filter(is_final=False).order_by("-step").first()
        return step.step if step and run.status == Run.Status.TRAINING else 0

    return wait_for(checkpointed, WAIT_SECONDS, lambda: f"no checkpoint:\n{trainer.log[-3000:]}")


def next_save(run: Run, trainer: Trainer) -> int:
    """The step of the next checkpoint the worker will write (read from its journal)."""
    trained = max((entry["step"] for entry in trainer.steps(run)), default=0)
    return (trained // SAVE_EVERY + 1) * SAVE_EVERY


def waits(trainer: Trainer, since: int) -> list[str]:
    """The training writes that failed on the service and wait for it (runs.stage's
    ride_out), in the worker's log after `since`."""
    return [line for line in trainer.log[since:].splitlines() if "; trying again in " in line]


def meets_the_outage(run: Run, trainer: Trainer, save: int, since: int) -> bool:
    """While the service is down (nothing asks the database): a training write waits for
    it, the worker reached the checkpoint `save` (written through every service), or the
    stage gave up."""
    log = trainer.log[since:]
    reached = any(entry["step"] >= save for entry in trainer.steps(run))
    return reached or "; trying again in " in log or "transient error in a run stage" in log


def hold_until(
    condition, cap: float = OUTAGE_CAP_SECONDS, after: float = 1, at_least: float = DOWN_SECONDS
) -> float:
    """Keep the service down until `condition()` (at most `cap` seconds), then `after`
    seconds more, and at least `at_least` seconds; returns how long it was held."""
    started = time.monotonic()
    while not condition() and time.monotonic() - started < cap:
        time.sleep(0.2)
    time.sleep(after)  # the worker is now inside the call that fails, or past it
    time.sleep(max(0.0, started + at_least - time.monotonic()))
    return time.monotonic() - started


def first_step_after(run: Run, trainer: Trainer, moment: float) -> dict | None:
    return next((entry for entry in trainer.steps(run) if entry["at"] > moment), None)


def suite_worker_answers(app) -> bool:
    """A task through this process's pooled broker connections (which outlived the old
    server), the suite's worker and the result backend."""
    try:
        return app.send_task("config.tasks.ping", queue="ingest").get(timeout=10) is not None
    except Exception:
        return False


def check_every_step_once(run: Run, trainer: Trainer) -> dict:
    """The run succeeded with each metric step once and its final checkpoint at the last
    step; returns the steps the worker trained more than once (resumed from a checkpoint)."""
    messages = [event.message for event in run.events.all()]
    assert run.status == Run.Status.SUCCEEDED, (run.status_reason, messages, trainer.log[-3000:])
    steps = list(RunMetric.objects.filter(run=run).order_by("step").values_list("step", flat=True))
    assert steps == list(range(1, STEPS + 1)), messages
    assert run.checkpoints.get(is_final=True).step == STEPS
    trained = Counter(entry["step"] for entry in trainer.steps(run))
    assert set(trained) == set(range(1, STEPS + 1))
    again = {step: count - 1 for step, count in sorted(trained.items()) if count > 1}
    resumes = [m for m in messages if m.startswith("Resuming from the checkpoint at step")]
    # Only what followed the checkpoint a resume started from is trained again.
    assert sum(again.values()) <= SAVE_EVERY * len(resumes), (again, messages)
    return again


def restarted_during_a_save(
    run, trainer, faults, figures, service: str, after=None, at_least=DOWN_SECONDS
) -> None:
    """Stop `service` as training reaches its next checkpoint save (for `at_least` seconds),
    start it again, then check the run succeeds with every step trained once and record the
    figures. `after()` runs once the service is back, before training is waited for."""
    since = len(trainer.log)
    save = next_save(run, trainer)  # met while it is down (or stopping)
    with faults.stopped(service) as outage:
        held = hold_until(lambda: meets_the_outage(run, trainer, save, since), at_least=at_least)
    if after is not None:
        after()
    resumed = wait_for(
        lambda: first_step_after(run, trainer, outage.up_at),
        WAIT_SECONDS,
        lambda: f"no step trained after the restart:\n{trainer.log[-3000:]}",
    )
    run = finished(run, timeout=WAIT_SECONDS)

    again = check_every_step_once(run, trainer)
    waited = waits(trainer, since)
    assert waited  # training met the outage...
    assert again == {}  # ...and its writes waited for the service: no step trained again
    messages = [event.message for event in run.events.all()]
    figures.append(
        {
            "fault": service,
            "down_s": f"{outage.down_seconds:.1f}",
            "notes": outage.notes,
            "held_s": f"{held:.1f}",
            "recover_s": f"{resumed['at'] - outage.up_at:.1f}",
            "writes_waiting": len(waited),
            "retrained": again,
            "events": [m for m in messages if "again" in m or "Resum" in m],
        }
    )
    print(figures[-1])


def test_postgres_restarted_mid_run(start_run, trainer, faults, figures):
    run = start_run("postgres restart")
    training_with_a_checkpoint(run, trainer)
    # Down longer than a lease, which nobody can renew meanwhile: the sweep leaves it to
    # its holder for a lease's length after the restart (runs.sweep), so no step is lost.
    restarted_during_a_save(run, trainer, faults, figures, "postgres", at_least=LEASE_SECONDS + 2)


def test_redis_restarted_mid_training_and_across_the_hand_off(start_run, trainer, faults, figures):
    """Training needs no Redis: a restart in the middle of it goes unnoticed (the worker's
    consumer reconnects when the task ends; a late-acked message it restores finds the run
    moved on). A hand-off to evaluation queued while Redis is down is queued again by the
    sweep once it is back (its pick-up deadline passed)."""
    from config.celery import app

    run = start_run("redis restart")
    training_with_a_checkpoint(run, trainer)

    with faults.stopped("redis") as mid:
        hold_until(lambda: True)
    trained_meanwhile = [e for e in trainer.steps(run) if mid.stopped_at < e["at"] < mid.up_at]
    assert Run.objects.get(pk=run.pk).status == Run.Status.TRAINING  # the restart is mid-run
    resumed = wait_for(
        lambda: first_step_after(run, trainer, mid.up_at),
        WAIT_SECONDS,
        lambda: f"no step trained after the restart:\n{trainer.log[-3000:]}",
    )

    def left_training() -> bool:
        return Run.objects.get(pk=run.pk).status != Run.Status.TRAINING

    with faults.stopped("redis") as hand_off:
        # Past the broker client's own retries (well under a second) of the hand-off.
        held = hold_until(left_training, cap=WAIT_SECONDS, after=3)
    assert left_training()  # the hand-off was queued while Redis was down
    wait_for(  # claimed by the next stage (its lease taken), or further on
        lambda: (
            Run.objects.filter(pk=run.pk)
            .exclude(status=Run.Status.EVALUATING, lease_owner="")
            .exists()
        ),
        WAIT_SECONDS,
        lambda: f"evaluation never claimed:\n{trainer.log[-3000:]}",
    )
    recovered = time.time() - hand_off.up_at
    run = finished(run, timeout=WAIT_SECONDS)

    again = check_every_step_once(run, trainer)
    assert again == {}  # training never noticed
    messages = [event.message for event in run.events.all()]
    assert any(m.startswith("No worker picked the run up yet") for m in messages), messages
    # The suite's own worker is back on the broker, for the tests that follow.
    wait_for(lambda: suite_worker_answers(app), 120, lambda: "the suite's worker is gone")
    figures.append(
        {
            "fault": "redis mid-training",
            "down_s": f"{mid.down_seconds:.1f}",
            "notes": mid.notes,
            "steps_trained_while_down": len(trained_meanwhile),
            "next_step_after_up_s": f"{resumed['at'] - mid.up_at:.1f}",
        }
    )
    figures.append(
        {
            "fault": "redis across the hand-off",
            "down_s": f"{hand_off.down_seconds:.1f}",
            "notes": hand_off.notes,
            "held_s": f"{held:.1f}",
            "recover_s": f"{recovered:.1f}",
            "retrained": again,
            "events": [m for m in messages if "again" in m or "Resum" in m],
        }
    )
    print(figures[-2:])


def test_s3_restarted_mid_run(start_run, trainer, faults, figures):
    from core.s3 import s3_client
    from runs import artifacts

    run = start_run("s3 restart")
    checkpoint = training_with_a_checkpoint(run, trainer)
    stored = Checkpoint.objects.get(run=run, step=checkpoint).s3_prefix
    keys = [
        item["Key"]
        for item in s3_client().list_objects_v2(Bucket=artifacts.bucket(), Prefix=stored)[
            "Contents"
        ]
    ]

    def still_stored() -> None:  # what was stored before the restart is still there
        for key in keys:
            s3_client().head_object(Bucket=artifacts.bucket(), Key=key)

    restarted_during_a_save(run, trainer, faults, figures, "s3", after=still_stored)
