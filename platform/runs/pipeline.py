"""The run pipeline, one service per Celery task: index a project, generate questions,
prepare → train → evaluate → publish a run, and sweep runs whose worker went away.

Each stage claims the run with a lease (runs.lease), does its work, then hands the run to
the next stage: it sets the next status, clears the owner and queues the next task. The
lease's expiry doubles as a pick-up deadline, so a hand-off that never reached a worker
(the broker was down) is requeued by `runs_sweep`, and a worker killed mid-stage is
replaced by another that resumes from the last checkpoint on S3.

Fencing: every change a stage makes to its run commits only while the stage's worker
still holds the lease (`runs.lease.fenced`); a worker that lost it (its run was taken over
after its lease expired) stops and leaves the run to the new owner (`LeaseLost`).

Errors: `StageFailed` is a problem the customer can act on (the run fails with its
message); `TransientError` (S3 unreachable, the database connection lost) releases the
lease and lets the task retry with backoff; after `MAX_ATTEMPTS` claims the run fails with
the reason. Any other database error (a constraint, data Postgres refuses) would fail the
same way again: the run fails at once with it (see `_transient`).
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from botocore.exceptions import BotoCoreError, ClientError
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection, transaction
from django.db.models import Q
from django.db.models.functions import Now

from corpora import indexing
from corpora.indexing import engine_questions as _engine_questions
from corpora.indexing import index_folder, load_index
from corpora.indexing import readable_documents as _readable_documents
from corpora.models import Project, Question, QuestionSet
from workers.documents.chunking import clean_text
from workers.training.config import TrainConfig

from . import artifacts
from .lease import (
    Heartbeat,
    LeaseLost,
    StageInterrupted,
    StageTimedOut,
    fenced,
    lease_claim,
    pickup_deadline,
    reconnect,
    worker_name,
)
from .models import Checkpoint, Run, RunEvent, RunMetric, TrajectorySample
from .notifications import run_end_notify_later
from .services import (
    JudgeRejected,
    checkpoints_prune,
    enqueue,
    ingest_queue,
    judge_build,
    run_event_add,
    train_queue,
)

logger = logging.getLogger(__name__)

MAX_ATTEMPTS = int(os.environ.get("SLEUTH_RUN_MAX_ATTEMPTS", "3"))
# Times the sweep queues a run again for a queue no worker announced before
# the run fails with "no worker serves queue …".
MAX_REQUEUES = int(os.environ.get("SLEUTH_RUN_MAX_REQUEUES", "5"))
METRICS_BATCH = 10  # steps buffered before one bulk INSERT (also flushed at checkpoints)
METRICS_FLUSH_SECONDS = 5.0
TRANSIENT = (BotoCoreError, ClientError, ConnectionError, TimeoutError)
# An OperationalError is worth retrying when its SQLSTATE says the server went away, is
# starting or stopping (class 08, 57P01-03), has no connection slot free (53300), or the
# transaction lost a race (40001, 40P01); psycopg gives none when the connection broke on
# the client side.
RETRYABLE_SQLSTATES = {"57P01", "57P02", "57P03", "40001", "40P01", "53300"}


class StageFailed(Exception):
    """A run that cannot go on; the message is shown to the customer as the reason."""


class TransientError(Exception):
    """A service was unreachable; the stage may succeed if tried again."""


# Which task and queue serve each status (the sweep requeues from this table).
STAGES = {
    Run.Status.QUEUED: ("workers.tasks.run_prepare", ingest_queue),
    Run.Status.PREPARING: ("workers.tasks.run_prepare", ingest_queue),
    Run.Status.TRAINING: ("workers.tasks.run_train", train_queue),
    Run.Status.EVALUATING: ("workers.tasks.run_evaluate", train_queue),
    Run.Status.PUBLISHING: ("workers.tasks.run_publish", ingest_queue),
}


def stage_enqueue(run: Run) -> None:
    task, queue = STAGES[run.status]
    enqueue(task, run.pk, queue=queue())


# Each stage's time limit is this share of the run's budget (its max_minutes), and at least
# SLEUTH_RUN_STAGE_MIN_SECONDS: training may use the whole budget (the trainer stops itself
# at `TrainConfig.training_seconds`, earlier), evaluation half of it, the rest a quarter.
STAGE_SHARES = {
    Run.Status.PREPARING: 0.25,
    Run.Status.TRAINING: 1.0,
    Run.Status.EVALUATING: 0.5,
    Run.Status.PUBLISHING: 0.25,
}


def run_budget_seconds(run: Run) -> float:
    return 60 * float(run.config.get("max_minutes") or settings.SLEUTH_MAX_RUN_MINUTES)


def stage_limit_seconds(run: Run, status: str) -> float:
    floor = float(os.environ.get("SLEUTH_RUN_STAGE_MIN_SECONDS", "600"))
    return max(floor, STAGE_SHARES[status] * run_budget_seconds(run))


def stall_seconds(run: Run) -> float:
    """How long training may go without progress (a step, a rollout round, a decoded token,
    a micro-batch) before it counts as hung: SLEUTH_RUN_STALL_SECONDS, or a twentieth of
    the run's budget between 5 and 30 minutes (a checkpoint upload or a model load must
    fit in it)."""
    if configured := os.environ.get("SLEUTH_RUN_STALL_SECONDS"):
        return float(configured)
    return min(max(run_budget_seconds(run) / 20, 300.0), 1800.0)


# -- project index and questions ------------------------------------------------------


def project_index_build(*, project_id: int) -> str:
    """Build (or reuse) the project's index and return its S3 prefix; the index lives with
    the documents (corpora.indexing), built as soon as they are parsed. A project with
    nothing to index fails the stage with the reason."""
    try:
        return indexing.project_index_build(project_id=project_id)
    except indexing.IndexFailed as failure:
        raise StageFailed(str(failure)) from None


def question_set_generate(*, project_id: int, n: int = 100) -> QuestionSet:
    """Questions with answers generated offline from the tables in the project's documents,
    stored as a question set named "Generated questions"."""
    from django.conf import settings

    from core.s3 import s3_client
    from workers.documents.questions import save_questions
    from workers.documents.synthesis import offline_questions

    project = Project.objects.get(pk=project_id)
    index = load_index(project_index_build(project_id=project_id))
    generated = offline_questions(index.chunks, n=n)
    if len(generated) < 2:
        raise StageFailed(
            "Could not generate questions from your documents (they have too few tables "
            "with numbers). Upload a question file with answers and start the run with it."
        )
    key = f"projects/{project.pk}/question-sets/generated-{int(time.time())}.jsonl"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "questions.jsonl"
        save_questions(generated, path)
        size = path.stat().st_size
        s3_client().upload_file(str(path), settings.S3_UPLOADS_BUCKET, key)
    with transaction.atomic():
        question_set = QuestionSet.objects.create(
            project=project, name="Generated questions", s3_key=key, size=size
        )
        Question.objects.bulk_create(
            Question(
                question_set=question_set,
                position=i,
                external_id=q.id,
                question=q.question,
                answer=q.answer,
                entity=q.entity or "",
                evidence=[
                    {k: v for k, v in vars(e).items() if k != "chunk_ids" and v is not None}
                    for e in q.evidence
                ],
            )
            for i, q in enumerate(generated, start=1)
        )
    return question_set


# -- stages ----------------------------------------------------------------------------


def _stage(
    run_id: int, statuses: list[str], status: str, work, *, progress_hooks: bool = False
) -> Run | None:
    """Claim the run, mark it `status`, run `work(run, heartbeat)` under a heartbeat, and
    turn errors into a failed run (StageFailed), a retry (TransientError) or a crash report.
    A worker that lost the lease returns None and leaves the run to its new owner.

    The stage has a time limit from the run's budget; a stage whose work reports progress
    (`progress_hooks`: training) is also stopped when it makes none for `stall_seconds`:
    it is queued again, and failed after MAX_ATTEMPTS such claims."""
    owner = worker_name()
    run = lease_claim(run_id=run_id, owner=owner, statuses=statuses)
    if run is None:
        return None  # another worker has it, or it moved on (a duplicate delivery)
    try:
        if run.cancel_requested:
            return run_finish_fenced(
                run=run, owner=owner, status=Run.Status.CANCELLED, reason="Cancelled."
            )
        if run.attempts > MAX_ATTEMPTS:
            return run_finish_fenced(
                run=run,
                owner=owner,
                status=Run.Status.FAILED,
                reason=(
                    f"Gave up after {MAX_ATTEMPTS} attempts at {run.status}: the workers kept "
                    "stopping or could not reach storage. Start the run again; if it fails "
                    "the same way, contact support."
                ),
            )
        if run.status != status:
            run_transition(
                run=run, owner=owner, status=status, reason=f"{status.capitalize()} on {owner}."
            )
        elif run.attempts > 1:
            run_event_add(
                run=run,
                kind=RunEvent.Kind.WARNING,
                message=f"Resumed {status} on {owner} (attempt {run.attempts}).",
            )
        with Heartbeat(
            run.pk,
            owner,
            stall_seconds=stall_seconds(run) if progress_hooks else None,
            limit_seconds=stage_limit_seconds(run, status),
        ) as heartbeat:
            work(run, heartbeat)
    except LeaseLost:
        logger.warning("run %s: lost its lease while %s; left to its new owner", run_id, status)
        return None
    except StageInterrupted as stop:
        return _interrupted(run, owner, status, stop)
    except StageFailed as failure:
        return _fail_if_held(run, owner, str(failure))
    except Exception as error:
        if _transient(error):
            if not _release(run.pk, owner, f"{_describe(error)}; trying again."):
                return None  # taken over meanwhile: the new owner goes on
            raise TransientError(_describe(error)) from error
        # The customer sees no exception text (paths, hosts, queries): a reference that
        # finds the traceback in the worker's log.
        reference = uuid.uuid4().hex[:8]
        logger.exception("run %s failed in %s (reference %s)", run_id, status, reference)
        return _fail_if_held(
            run,
            owner,
            f"Something went wrong on our side while {status} (reference {reference}). "
            "Start the run again; if it fails the same way, contact support with the reference.",
        )
    run.refresh_from_db()
    return run


def run_transition(*, run: Run, owner: str, status: str, reason: str, also=None, **fields) -> Run:
    """Move the run to `status` with its event, in one transaction that commits only while
    `owner` holds the lease (a compare-and-set on the owner); `also()` runs inside it.
    Raises LeaseLost, changing nothing, otherwise."""
    with fenced(run.pk, owner):
        if also is not None:
            also()
        Run.objects.filter(pk=run.pk).update(status=status, status_reason=reason, **fields)
        kind = RunEvent.Kind.ERROR if status == Run.Status.FAILED else RunEvent.Kind.STATUS
        run_event_add(run=run, kind=kind, status=status, message=reason or f"{status}.")
    run.refresh_from_db()
    return run


def run_finish_fenced(*, run: Run, owner: str, status: str, reason: str, also=None) -> Run:
    """End the run (succeeded, failed or cancelled) and release its lease, if `owner` still
    holds it ("" for a run nobody holds); its owner is mailed once this commits."""
    run = run_transition(
        run=run,
        owner=owner,
        status=status,
        reason=reason,
        also=also,
        finished_at=Now(),
        lease_owner="",
        lease_expires_at=None,
    )
    run_end_notify_later(run)
    return run


def _interrupted(run: Run, owner: str, status: str, stop: StageInterrupted) -> Run | None:
    """A stage the heartbeat stopped: past its time limit the run fails (another try would
    be as long); a stall queues it again for a fresh worker, up to MAX_ATTEMPTS claims."""
    logger.warning("run %s: stopped while %s: %s", run.pk, status, stop)
    reconnect()  # the signal may have landed inside a query
    if isinstance(stop, StageTimedOut):
        budget = run_budget_seconds(run) / 60
        return _fail_if_held(
            run,
            owner,
            f"{status.capitalize()} {stop}, set by the run's budget of {budget:g} minutes. "
            "Start the run again with fewer steps or a larger budget.",
        )
    if run.attempts >= MAX_ATTEMPTS:
        return _fail_if_held(
            run,
            owner,
            f"The run {stop} while {status}, {run.attempts} times in a row: a step never "
            "finished (a stuck judge, storage or rollout). Start the run again; if it fails "
            "the same way, contact support.",
        )
    message = f"The run {stop} while {status} on {owner}; queued again for another worker."
    if not _release(run.pk, owner, message):
        return None  # taken over meanwhile
    _enqueue_quietly(run)
    run.refresh_from_db()
    return run


def _fail_if_held(run: Run, owner: str, reason: str) -> Run | None:
    try:
        return run_finish_fenced(run=run, owner=owner, status=Run.Status.FAILED, reason=reason)
    except LeaseLost:
        logger.warning("run %s: not failed (%s): another worker holds it now", run.pk, reason)
        return None


def _transient(error: BaseException) -> bool:
    """Storage or the network unreachable, the database connection lost, or the worker's disk
    full: another attempt may succeed. Other database errors (IntegrityError…) would repeat."""
    if isinstance(error, TRANSIENT + (TransientError, InterfaceError)):
        return True
    if _disk_full(error):
        return True  # this worker's disk: another worker, or this one later, may have room
    if isinstance(error, OperationalError):
        sqlstate = getattr(error.__cause__, "sqlstate", None)
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in RETRYABLE_SQLSTATES
    return False


# How long a training step's writes wait for the database or storage to come back (a
# restart takes seconds) before the stage gives up and is retried from its last checkpoint.
RIDE_OUT_SECONDS = 60.0


def ride_out(call, what: str):
    """`call()`, tried again while it fails on a lost connection to the database or storage
    (a restart), reconnecting and backing off, for up to RIDE_OUT_SECONDS: a service
    restart in the middle of training costs no step. Then, or for any other error, it
    raises (the stage is retried from its last checkpoint). A lease that lapsed meanwhile is
    safe: the writes are fenced (LeaseLost once another worker took the run). Not inside a
    transaction, whose broken connection only its owner resets."""
    deadline = time.monotonic() + RIDE_OUT_SECONDS
    pause = 0.5
    while True:
        try:
            return call()
        except Exception as error:
            if isinstance(error, ClientError):
                status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
                passing = status >= 500  # the store is starting or stopping
            elif isinstance(error, OSError) and not isinstance(error, TRANSIENT):
                passing = False  # a local file (the disk full…), not a service
            else:
                passing = _transient(error)
            if not passing or connection.in_atomic_block or time.monotonic() > deadline:
                raise
            logger.warning("%s failed (%r); trying again in %.1f s", what, error, pause)
            reconnect()
            time.sleep(pause)
            pause = min(2 * pause, 2.0)


def _describe(error: Exception) -> str:
    """What the customer reads about a transient error: which service, never its text
    (endpoints, hosts, paths); the operator's log has that."""
    logger.warning("transient error in a run stage: %r", error)
    if isinstance(error, (BotoCoreError, ClientError)):
        return "Could not reach the artifact store"
    if isinstance(error, DatabaseError):
        return "Could not reach the database"
    if isinstance(error, TransientError):
        return str(error)
    if _disk_full(error):
        return "The worker ran out of disk space"
    return "A service the run needs did not answer"


def _disk_full(error: BaseException) -> bool:
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def _release(run_id: int, owner: str, message: str) -> bool:
    """Give the lease back with a pick-up deadline, so a retry (or the sweep) takes over.
    False when another worker holds the run by now."""
    try:
        connection.close_if_unusable_or_obsolete()  # a lost connection: reconnect
        released = Run.objects.filter(pk=run_id, lease_owner=owner).update(
            lease_owner="", lease_expires_at=pickup_deadline()
        )
        if not released:
            return False
        run_event_add(run=Run.objects.get(pk=run_id), kind=RunEvent.Kind.WARNING, message=message)
    except DatabaseError:
        pass  # the lease expires on its own
    return True


def _handoff(
    run: Run, heartbeat: Heartbeat, status: str, reason: str, *, also=None, **fields
) -> None:
    """Move the run to the next stage and queue its task (after commit), if this worker
    still holds it; otherwise LeaseLost and nothing changes."""
    if heartbeat.lost:
        raise LeaseLost(f"run {run.pk} was taken over")
    with transaction.atomic():
        run_transition(
            run=run,
            owner=heartbeat.owner,
            status=status,
            reason=reason,
            also=also,
            lease_owner="",
            lease_expires_at=pickup_deadline(),
            attempts=0,  # attempts count claims of one stage
            requeues=0,
            **fields,
        )
        transaction.on_commit(lambda: _enqueue_quietly(run))


def _enqueue_quietly(run: Run) -> None:
    try:
        stage_enqueue(run)
    except Exception:  # the broker is down: the sweep requeues once the deadline passes
        logger.warning("could not queue run %s (%s); the sweep will", run.pk, run.status)


def run_prepare(*, run_id: int) -> Run | None:
    """Index the project, take (or generate) the questions, map their evidence to chunks,
    split them by entity and store the split with the run."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from workers.documents.evidence import map_evidence
        from workers.documents.questions import save_questions, split_by_entity

        config = TrainConfig.from_dict(run.config)
        index_prefix = project_index_build(project_id=run.project_id)
        index = load_index(index_prefix)
        if run.question_set is None:
            run.question_set = question_set_generate(project_id=run.project_id)
            run_event_add(
                run=run,
                message=f"Generated {run.question_set.questions.count()} questions from tables.",
            )
        questions = _engine_questions(run.question_set)
        report = map_evidence(questions, index.chunks)
        train, val = split_by_entity(questions, config.val_fraction, config.entity_split_seed())
        if not train or not val:
            raise StageFailed(
                "The questions need at least two different entities (companies, products…) "
                "so that validation uses ones the model never trained on."
            )
        key = f"{run.attempt_prefix}/questions"
        with tempfile.TemporaryDirectory() as folder:
            save_questions(train, Path(folder) / "train.jsonl")
            save_questions(val, Path(folder) / "val.jsonl")
            artifacts.upload_folder(Path(folder), key)
        _handoff(
            run,
            heartbeat,
            Run.Status.TRAINING,
            "Waiting for a training worker.",
            also=lambda: run_event_add(
                run=run,
                message=(
                    f"{len(index)} chunks indexed; {len(train)} training and {len(val)} "
                    f"validation questions; {report.summary()}"
                ),
            ),
            index_prefix=index_prefix,
            questions_key=key,
            question_set=run.question_set,
        )

    return _stage(run_id, [Run.Status.QUEUED, Run.Status.PREPARING], Run.Status.PREPARING, work)


def _load_questions(run: Run, folder: Path):
    from workers.documents.questions import load_questions

    artifacts.download_folder(run.questions_key, folder)
    return load_questions(folder / "train.jsonl"), load_questions(folder / "val.jsonl")


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


def _restore_checkpoint(run: Run, out_dir: Path, owner: str) -> int:
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


def run_train(*, run_id: int) -> Run | None:
    """Cold start + RL with the engine's trainer; metrics and samples stream into Postgres,
    checkpoints go to S3. A run taken over from a dead worker resumes from its last
    checkpoint on S3."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from workers.agent.models import ModelNotFoundError, load_model
        from workers.training.rl import StopRequested, train

        config = TrainConfig.from_dict(run.config)
        out_dir = artifacts.work_dir() / f"run-{run.pk}-{heartbeat.owner.replace(':', '-')}"
        shutil.rmtree(out_dir, ignore_errors=True)
        try:
            resumed_from = _restore_checkpoint(run, out_dir, heartbeat.owner)
            heartbeat.progress()
            if resumed_from:
                run_event_add(
                    run=run, message=f"Resuming from the checkpoint at step {resumed_from}."
                )
            train_qs, val_qs = _load_questions(run, out_dir / "questions")
            index = load_index(run.index_prefix)
            try:
                model, tokenizer = load_model(config.model)
            except ModelNotFoundError as error:
                logger.warning("run %s: could not load %r: %s", run.pk, config.model, error)
                raise StageFailed(
                    f"The model {config.model!r} is not available on the training workers. "
                    "Start the run with another model, or ask the platform's operator to "
                    "install it."
                ) from None
            heartbeat.progress()
            stream = MetricStream(run, heartbeat.owner)
            judge = run_judge(run, config)

            def on_step(record: dict, samples: list[dict]) -> None:
                stream.add(record, samples)
                heartbeat.progress()

            def on_checkpoint(folder: Path, step: int) -> None:
                stream.flush()
                heartbeat.check()
                if heartbeat.lost:
                    raise LeaseLost(f"run {run.pk} was taken over")
                prefix = f"{run.attempt_prefix}/checkpoints/step-{step:06d}"
                size = ride_out(
                    lambda: artifacts.upload_folder(folder, prefix),
                    f"run {run.pk}: uploading the checkpoint at step {step}",
                )

                def record_checkpoint() -> None:
                    record = RunMetric.objects.filter(run=run, step=step).first()
                    val = {k: v for k, v in (record.data if record else {}).items() if "val" in k}
                    with fenced(run.pk, heartbeat.owner):
                        Checkpoint.objects.update_or_create(
                            run=run,
                            step=step,
                            defaults={"s3_prefix": prefix, "size_bytes": size, "metrics": val},
                        )
                        checkpoints_prune(run=run, keep_last=config.keep_checkpoints)

                ride_out(
                    record_checkpoint, f"run {run.pk}: recording the checkpoint at step {step}"
                )

            try:
                summary = train(
                    config,
                    model=model,
                    tokenizer=tokenizer,
                    index=index,
                    train_questions=train_qs,
                    val_questions=val_qs,
                    out_dir=out_dir,
                    resume=bool(resumed_from),
                    progress=False,
                    log=lambda message: logger.info("run %s: %s", run.pk, message),
                    should_stop=heartbeat.should_stop,
                    on_step=on_step,
                    on_checkpoint=on_checkpoint,
                    judge=judge,
                )
            except StopRequested:
                summary = None  # stopped mid-step: the step's work is dropped
            if heartbeat.lost:
                raise LeaseLost(f"run {run.pk} was taken over")  # its new owner reports
            if heartbeat.interrupted is not None:
                raise heartbeat.interrupted  # stalled or out of time (see _interrupted)
            stream.flush()
            run.refresh_from_db()
            if run.cancel_requested or summary is None:
                run_finish_fenced(
                    run=run,
                    owner=heartbeat.owner,
                    status=Run.Status.CANCELLED,
                    reason="Cancelled during training.",
                )
                return
            final_prefix = f"{run.attempt_prefix}/final"
            artifacts.upload_folder(Path(summary["final"]), final_prefix)
            last = run.checkpoints.order_by("-step").first()
            note = f" ({summary['stopped_early']})" if summary.get("stopped_early") else ""
            _handoff(
                run,
                heartbeat,
                Run.Status.EVALUATING,
                f"Trained {summary['steps']} steps{note}; evaluating against baselines.",
                also=lambda: Checkpoint.objects.filter(pk=last.pk).update(is_final=True),
                final_prefix=final_prefix,
            )
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

    return _stage(run_id, [Run.Status.TRAINING], Run.Status.TRAINING, work, progress_hooks=True)


def _final_prefix(run: Run) -> str:
    return run.final_prefix or f"{run.artifacts_prefix}/final"  # runs trained before 0003


def run_judge(run: Run, config: TrainConfig):
    """The run's answer judge with the right key and client (runs.services.judge_build)."""
    try:
        return judge_build(reward=config.reward, project=run.project)
    except JudgeRejected as error:
        raise StageFailed(str(error)) from None


def evaluate(final_dir: Path, config: TrainConfig, index, val_questions, judge) -> dict:
    """The trained agent against the base model and one-shot BM25 (echo) on the validation
    questions. Uses the trainer's `evaluate_run` when the training area provides it."""
    try:
        from workers.training.evaluate import evaluate_run
    except ImportError:
        evaluate_run = None
    if evaluate_run is not None:
        return evaluate_run(final_dir.parent, config, index, val_questions, judge=judge)

    from functools import cache

    from workers.agent.models import load_model
    from workers.agent.trajectory import SamplingParams
    from workers.evaluation.harness import evaluate as harness_evaluate
    from workers.evaluation.policies import build_policy

    @cache
    def load(name: str | None):
        return load_model(name)

    policies = {
        name: build_policy(
            spec, tool=index, limits=config.limits, load_model=load, base_model=config.model
        )
        for name, spec in (("trained", str(final_dir)), ("base", "base"), ("echo", "echo"))
    }
    tokenizer = load(str(final_dir))[1]
    report = harness_evaluate(
        policies,
        val_questions,
        judge=judge,
        count_tokens=lambda text: len(tokenizer.encode(text, add_special_tokens=False)),
        samples=1,
        sampling=SamplingParams(temperature=0.0, seed=config.seed),
        show_progress=False,
    )
    report.pop("trajectories", None)
    return report


def run_evaluate(*, run_id: int) -> Run | None:
    def work(run: Run, heartbeat: Heartbeat) -> None:
        from workers.documents.evidence import map_evidence

        config = TrainConfig.from_dict(run.config)
        with tempfile.TemporaryDirectory(dir=artifacts.work_dir()) as folder:
            final_dir = artifacts.download_folder(_final_prefix(run), Path(folder) / "final")
            _, val_qs = _load_questions(run, Path(folder) / "questions")
            index = load_index(run.index_prefix)
            map_evidence(val_qs, index.chunks)
            report = evaluate(final_dir, config, index, val_qs, run_judge(run, config))
        trained = (report.get("policies") or {}).get("trained", {})
        _handoff(
            run,
            heartbeat,
            Run.Status.PUBLISHING,
            "Evaluated; publishing the model.",
            also=lambda: Checkpoint.objects.filter(run=run, is_final=True).update(
                metrics={f"val/{k}": v for k, v in trained.items()}
            ),
            eval_report=report,
        )

    return _stage(run_id, [Run.Status.EVALUATING], Run.Status.EVALUATING, work)


def run_publish(*, run_id: int) -> Run | None:
    """The final model, its model card and agent bundle as a folder on S3, plus one archive."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from django.utils.text import slugify

        from core.s3 import s3_client
        from workers.publishing import PublishInfo, make_archive, publish_folder

        config = TrainConfig.from_dict(run.config)
        checkpoint = run.checkpoints.filter(is_final=True).first()
        if checkpoint is None:
            raise StageFailed("The run has no final checkpoint to publish.")
        name = slugify(f"{run.project.name}-{run.name}") or f"run-{run.pk}"
        with tempfile.TemporaryDirectory(dir=artifacts.work_dir()) as folder:
            folder = Path(folder)
            final_dir = artifacts.download_folder(_final_prefix(run), folder / "final")
            train_qs, val_qs = _load_questions(run, folder / "questions")
            index_dir = index_folder(run.index_prefix)
            info = PublishInfo(
                name=run.name,
                base_model=config.model,
                config=config.to_dict(),
                eval_report=run.eval_report,
                data_summary={
                    "documents": _readable_documents(run.project).count(),
                    "chunks": json.loads((index_dir / "index.json").read_text()).get("chunk_count"),
                    "training questions": len(train_qs),
                    "validation questions": len(val_qs),
                    "validation entities": ", ".join(sorted({q.entity or "?" for q in val_qs})),
                    "training steps": checkpoint.step,
                },
            )
            published = publish_folder(final_dir, index_dir, info, folder / name)
            prefix = f"{run.attempt_prefix}/published/{name}"
            size = artifacts.upload_folder(published, prefix)
            archive = make_archive(published, folder / f"{name}.tar.gz")
            archive_key = f"{run.attempt_prefix}/published/{name}.tar.gz"
            s3_client().upload_file(str(archive), artifacts.bucket(), archive_key)
        run_finish_fenced(
            run=run,
            owner=heartbeat.owner,
            status=Run.Status.SUCCEEDED,
            reason="Published.",
            also=lambda: Checkpoint.objects.filter(pk=checkpoint.pk).update(
                published_prefix=prefix, archive_key=archive_key, size_bytes=size
            ),
        )

    return _stage(run_id, [Run.Status.PUBLISHING], Run.Status.PUBLISHING, work)


def run_fail(*, run_id: int, reason: str) -> Run:
    """End a run as failed (a task that ran out of retries), unless a worker holds it by now
    (a retry or the sweep handed it to another one)."""
    run = Run.objects.get(pk=run_id)
    try:
        return run_finish_fenced(run=run, owner="", status=Run.Status.FAILED, reason=reason)
    except LeaseLost:
        run.refresh_from_db()
        return run


# -- which queues have a worker ---------------------------------------------------------
#
# Each worker announces the queues it consumes in Redis (the Django cache) every sweep
# interval, with an expiry of a few intervals, so the sweep can tell a queue no worker
# serves (the run fails with that reason) from a busy one (the run keeps waiting).

QUEUE_KEY = "sleuth:queue-served:{}"


def queues_announce(queues: list[str], ttl_seconds: float) -> None:
    from django.core.cache import cache

    cache.set_many({QUEUE_KEY.format(q): True for q in queues}, timeout=max(int(ttl_seconds), 1))


def queue_served(queue: str) -> bool:
    """Whether a worker announced `queue` lately; True when the cache cannot say."""
    from django.core.cache import cache

    try:
        return bool(cache.get(QUEUE_KEY.format(queue)))
    except Exception:
        return True


def runs_sweep() -> list[int]:
    """Requeue or fail active runs whose lease (or pick-up deadline) passed; returns their ids.

    A worker killed mid-stage stops renewing its lease: its run is requeued and the next
    worker resumes it from the last checkpoint, up to MAX_ATTEMPTS claims. A stage that no
    worker claimed is queued again (the broker may have lost the task, or been down when
    the run was created); on a queue no worker serves, up to MAX_REQUEUES times. Then the
    run fails with the reason, so no run stays queued or "training" forever.
    """
    swept = []
    due = Run.objects.filter(status__in=Run.ACTIVE).filter(
        Q(lease_expires_at__lt=Now()) | Q(lease_expires_at__isnull=True, lease_owner="")
    )
    for run in due:
        taken = Run.objects.filter(
            pk=run.pk, lease_owner=run.lease_owner, lease_expires_at=run.lease_expires_at
        ).update(lease_owner="", lease_expires_at=pickup_deadline())
        if not taken:
            continue  # renewed or swept by someone else meanwhile
        run.refresh_from_db()
        swept.append(run.pk)
        try:
            _sweep_one(run)
        except LeaseLost:
            continue  # claimed by a worker meanwhile
    return swept


def _sweep_one(run: Run) -> None:
    """End or requeue one run the sweep took (nobody holds it: owner "")."""
    if run.cancel_requested:
        run_finish_fenced(run=run, owner="", status=Run.Status.CANCELLED, reason="Cancelled.")
        return
    if run.attempts >= MAX_ATTEMPTS:
        run_finish_fenced(
            run=run,
            owner="",
            status=Run.Status.FAILED,
            reason=(
                f"The worker stopped responding while {run.status} ({run.attempts} "
                "attempts). Start the run again; if it fails the same way, contact support."
            ),
        )
        return
    queue = STAGES[run.status][1]()
    if queue_served(queue):
        requeues = 0
    else:
        requeues = run.requeues + 1
        if requeues > MAX_REQUEUES:
            run_finish_fenced(
                run=run,
                owner="",
                status=Run.Status.FAILED,
                reason=(
                    f"No worker serves queue {queue}, so nothing could take the run up while "
                    f"{run.status}. The platform's operator must start a worker for that "
                    "queue; then start the run again."
                ),
            )
            return
    with fenced(run.pk, ""):
        Run.objects.filter(pk=run.pk).update(requeues=requeues)
        run_event_add(
            run=run,
            kind=RunEvent.Kind.WARNING,
            message="The worker stopped responding; the run was queued again."
            if run.attempts
            else f"No worker picked the run up yet; queued again on {queue}.",
        )
    _enqueue_quietly(run)
