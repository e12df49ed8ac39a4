"""The run's four stages, one service per Celery task: prepare → train → evaluate →
publish, each run by the stage machinery (runs.stage) and handing the run to the next;
and the questions generated for a run that came without any.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import uuid
from pathlib import Path

from django.conf import settings
from django.db import transaction

from corpora import indexing
from corpora.indexing import engine_questions as _engine_questions
from corpora.indexing import index_folder, load_index
from corpora.indexing import readable_documents as _readable_documents
from corpora.models import Project, Question, QuestionSet
from corpora.selectors import project_suggested_pack
from engine.evaluation.pooled import COLD_START_DIR
from engine.packs import synthesized_questions
from engine.training.config import TrainConfig

from . import artifacts
from .judge_budget import JudgeBudgetSpent
from .lease import Heartbeat, LeaseLost, fenced
from .metric_stream import MetricStream, restore_checkpoint
from .models import Checkpoint, Run, RunMetric
from .routing import run_needs
from .services import (
    JudgeRejected,
    checkpoints_prune,
    judge_build,
    model_allowed,
    run_event_add,
)
from .stage import (
    StageFailed,
    TransientError,
    handoff,
    ride_out,
    run_finish_fenced,
    run_stage,
)

logger = logging.getLogger(__name__)


def project_index_build(*, project_id: int) -> str:
    """Build (or reuse) the project's index and return its S3 prefix; the index lives with
    the documents (corpora.indexing), built as soon as they are parsed. A project with
    nothing to index fails the stage with the reason."""
    try:
        return indexing.project_index_build(project_id=project_id)
    except indexing.IndexFailed as failure:
        raise StageFailed(str(failure)) from None


def question_set_generate(*, project_id: int, n: int = 100) -> QuestionSet:
    """Questions with answers generated offline from the project's documents (their
    sentences and, in filings, their tables), stored as a question set named "Generated
    questions"."""

    from core.s3 import s3_client
    from engine.documents.questions import save_questions

    project = Project.objects.get(pk=project_id)
    index = load_index(project_index_build(project_id=project_id))
    # The kinds any documents hold, and a pack's own where the documents look like its kind
    # (a filing's tables): the set is a draft the customer reviews before a run uses it.
    pack = project_suggested_pack(project=project)
    generated = synthesized_questions(pack, index.chunks, n)
    if len(generated) < 2:
        raise StageFailed(
            "Could not generate questions from your documents (they have too few tables "
            "with numbers and too few sentences that state a fact). Upload a question file "
            "with answers and start the run with it."
        )
    # Unique: a run's preparation and the page's button may generate in the same second.
    key = f"projects/{project.pk}/question-sets/generated-{uuid.uuid4().hex}.jsonl"
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


def run_prepare(*, run_id: int) -> Run | None:
    """Index the project, take (or generate) the questions, map their evidence to chunks,
    split them by entity and store the split with the run."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from engine.documents.evidence import map_evidence
        from engine.documents.questions import save_questions

        config = TrainConfig.from_dict(run.config)
        index_prefix = project_index_build(project_id=run.project_id)
        index = load_index(index_prefix)
        if run.question_set is None:
            run.question_set = question_set_generate(project_id=run.project_id)
            run_event_add(
                run=run,
                message=(
                    f"Generated {run.question_set.questions.count()} questions from your "
                    "documents (offline, from their sentences; in filings, their tables)."
                ),
            )
        questions = _engine_questions(run.question_set)
        report = map_evidence(questions, index.chunks)
        try:
            train, val = config.split(questions)
        except ValueError as exc:  # more folds than entities, a fold out of range
            raise StageFailed(f"{exc}.") from None
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
        handoff(
            run,
            heartbeat,
            Run.Status.TRAINING,
            f"Waiting for {run_needs(run).worker()} to train it.",
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

    return run_stage(run_id, [Run.Status.QUEUED, Run.Status.PREPARING], Run.Status.PREPARING, work)


def _load_questions(run: Run, folder: Path):
    from engine.documents.questions import load_questions

    artifacts.download_folder(run.questions_key, folder)
    return load_questions(folder / "train.jsonl"), load_questions(folder / "val.jsonl")


def allowed_model(run: Run, config: TrainConfig) -> str:
    """The run's model, checked against the operator's allowlist again on the worker, before
    anything loads it: a run's stored settings may have been edited in the database, come
    from the API, or predate a change of the list, and a hub id or a path named there would
    otherwise load on a shared worker (issue 14.4)."""
    if not model_allowed(config.model):
        logger.warning("run %s: model %r is not on the allowlist; not loaded", run.pk, config.model)
        raise StageFailed(
            f"The model {str(config.model)[:100]!r} is not offered on this platform. Start the "
            "run again with one of the models the run form offers."
        )
    return config.model


def allowed_ranks(run: Run, config: TrainConfig) -> int:
    """The training processes the run starts: its settings' `ranks`, which run_create set
    from its needs (one a GPU); settings asking for more than its needs, which the worker was
    chosen for, are refused (they may have been edited in the database)."""
    most = run_needs(run).ranks
    if config.ranks > most:
        raise StageFailed(
            f"The run's settings ask for {config.ranks} training processes; what it needs from "
            f"a worker ({run_needs(run).describe()}) allows {most}."
        )
    return config.ranks


def run_train(*, run_id: int) -> Run | None:
    """Cold start + RL with the engine's trainer; metrics and samples stream into Postgres,
    checkpoints go to S3. A run taken over from a dead worker resumes from its last
    checkpoint on S3."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from engine.agent.models import ModelNotFoundError, load_trainable
        from engine.training.distributed import (
            RankFailed,
            RankJob,
            threads_per_rank,
            train_on_ranks,
        )
        from engine.training.rl import StopRequested, train

        config = TrainConfig.from_dict(run.config)
        allowed_model(run, config)  # before any download or load
        out_dir = artifacts.work_dir() / f"run-{run.pk}-{heartbeat.owner.replace(':', '-')}"
        shutil.rmtree(out_dir, ignore_errors=True)
        try:
            resumed_from = restore_checkpoint(run, out_dir, heartbeat.owner)
            heartbeat.progress()
            if resumed_from:
                run_event_add(
                    run=run, message=f"Resuming from the checkpoint at step {resumed_from}."
                )
            train_qs, val_qs = _load_questions(run, out_dir / "questions")
            index = load_index(run.index_prefix)
            try:
                model, tokenizer = load_trainable(config.model)
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

            # Ranks 1… (a run on several devices) are child processes training the same
            # job; this process is rank 0, with the hooks, the judge and its key.
            world = allowed_ranks(run, config)
            if world > 1:
                logger.info("run %s: training on %d ranks", run.pk, world)
            job = RankJob(
                config.to_dict(),
                str(index_folder(run.index_prefix)),
                train_qs,
                val_qs,
                str(out_dir),
                bool(resumed_from),
                threads=threads_per_rank(world),
            )
            try:
                summary = train_on_ranks(
                    world,
                    job,
                    lambda ranks: train(
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
                        ranks=ranks,
                    ),
                )
            except StopRequested:
                summary = None  # stopped mid-step: the step's work is dropped
            except JudgeBudgetSpent as error:
                raise _budget_spent(run, error) from None
            except RankFailed as error:
                if isinstance(error.__cause__, JudgeBudgetSpent):
                    raise _budget_spent(run, error.__cause__) from None
                # Killed for memory, or its machine's trouble: another attempt (here or on
                # another worker) resumes from the last checkpoint, as after a lost worker.
                # The customer reads which process and how; the log has its last lines.
                logger.warning("run %s: %s", run.pk, error)
                raise TransientError(
                    f"A training process of this run stopped ({error.summary})"
                ) from error
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
            cold_start = Path(summary["final"]).parent / COLD_START_DIR
            if cold_start.is_dir():  # the evaluation reads RL's share of the run against it
                try:
                    artifacts.upload_folder(cold_start, _beside(final_prefix, COLD_START_DIR))
                except Exception:  # S3's trouble: the run goes on, with no share to report
                    logger.warning("run %s: the cold start was not kept", run.pk, exc_info=True)
            last = run.checkpoints.order_by("-step").first()
            note = f" ({summary['stopped_early']})" if summary.get("stopped_early") else ""
            handoff(
                run,
                heartbeat,
                Run.Status.EVALUATING,
                f"Trained {summary['steps']} steps{note}; evaluating against baselines.",
                also=lambda: Checkpoint.objects.filter(pk=last.pk).update(is_final=True),
                final_prefix=final_prefix,
            )
        finally:
            shutil.rmtree(out_dir, ignore_errors=True)

    return run_stage(run_id, [Run.Status.TRAINING], Run.Status.TRAINING, work, progress_hooks=True)


def _final_prefix(run: Run) -> str:
    return run.final_prefix or f"{run.artifacts_prefix}/final"  # runs trained before 0003


def _beside(prefix: str, name: str) -> str:
    """The folder `name` next to the one at `prefix` on S3."""
    return f"{prefix.rsplit('/', 1)[0]}/{name}"


def _budget_spent(run: Run, error: JudgeBudgetSpent) -> StageFailed:
    """The run reached the end of its account's monthly calls to the operator's judges: it
    fails with the reason, its checkpoints kept. It does not go on with the offline judge
    (runs.judge_budget says why)."""
    logger.info("run %s: the account's judge budget is spent", run.pk)
    return StageFailed(f"The run stopped: {error}")


def run_judge(run: Run, config: TrainConfig):
    """The run's answer judge with the right key and client (runs.services.judge_build)."""
    try:
        return judge_build(reward=config.reward, project=run.project)
    except JudgeRejected as error:
        raise StageFailed(str(error)) from None


def evaluate(final_dir: Path, config: TrainConfig, index, val_questions, judge) -> dict:
    """The trained agent against the base model and one-shot BM25 (echo) on the validation
    questions, on this worker's GPU if it has one (the trainer's `evaluate_run`)."""
    from engine.training.evaluate import evaluate_run

    return evaluate_run(final_dir.parent, config, index, val_questions, judge=judge)


def run_evaluate(*, run_id: int) -> Run | None:
    def work(run: Run, heartbeat: Heartbeat) -> None:
        from engine.documents.evidence import map_evidence

        config = TrainConfig.from_dict(run.config)
        allowed_model(run, config)  # the base model is loaded as a baseline
        with tempfile.TemporaryDirectory(dir=artifacts.work_dir()) as folder:
            final_dir = artifacts.download_folder(_final_prefix(run), Path(folder) / "final")
            try:  # the agent before RL, evaluated beside it: RL's share of this run
                cold_start = _beside(_final_prefix(run), COLD_START_DIR)
                artifacts.download_folder(cold_start, Path(folder) / COLD_START_DIR)
            except FileNotFoundError:
                pass  # none kept: no cold start, or resumed on another worker after it
            _, val_qs = _load_questions(run, Path(folder) / "questions")
            index = load_index(run.index_prefix)
            map_evidence(val_qs, index.chunks)
            try:
                report = evaluate(final_dir, config, index, val_qs, run_judge(run, config))
            except JudgeBudgetSpent as error:
                raise _budget_spent(run, error) from None
        trained = (report.get("policies") or {}).get("trained", {})
        handoff(
            run,
            heartbeat,
            Run.Status.PUBLISHING,
            "Evaluated; publishing the model.",
            also=lambda: Checkpoint.objects.filter(run=run, is_final=True).update(
                metrics={f"val/{k}": v for k, v in trained.items()}
            ),
            eval_report=report,
        )

    return run_stage(run_id, [Run.Status.EVALUATING], Run.Status.EVALUATING, work)


def run_publish(*, run_id: int) -> Run | None:
    """The final model, its model card and agent bundle as a folder on S3, plus one archive."""

    def work(run: Run, heartbeat: Heartbeat) -> None:
        from django.utils.text import slugify

        from core.s3 import s3_client
        from engine.publishing import PublishInfo, make_archive, publish_folder

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

    return run_stage(run_id, [Run.Status.PUBLISHING], Run.Status.PUBLISHING, work)


def run_fail(*, run_id: int, reason: str) -> Run:
    """End a run as failed (a task that ran out of retries), unless a worker holds it by now
    (a retry or the sweep handed it to another one)."""
    run = Run.objects.get(pk=run_id)
    try:
        return run_finish_fenced(run=run, owner="", status=Run.Status.FAILED, reason=reason)
    except LeaseLost:
        run.refresh_from_db()
        return run
