"""A run trains one search agent on a project's documents and questions.

Lifecycle: queued → preparing → training → evaluating → publishing → succeeded, or failed /
cancelled; every change is a RunEvent with time and reason. A worker holds a lease on the
run (renewed by heartbeat) while it works; another worker may take over an expired lease.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class Run(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued"
        PREPARING = "preparing"
        TRAINING = "training"
        EVALUATING = "evaluating"
        PUBLISHING = "publishing"
        SUCCEEDED = "succeeded"
        FAILED = "failed"
        CANCELLED = "cancelled"

    ACTIVE = (
        Status.QUEUED,
        Status.PREPARING,
        Status.TRAINING,
        Status.EVALUATING,
        Status.PUBLISHING,
    )
    FINISHED = (Status.SUCCEEDED, Status.FAILED, Status.CANCELLED)

    project = models.ForeignKey("corpora.Project", on_delete=models.CASCADE, related_name="runs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="runs"
    )
    name = models.CharField(max_length=120)
    preset = models.CharField(max_length=32, blank=True)
    # None: questions are generated from the project's documents.
    question_set = models.ForeignKey(
        "corpora.QuestionSet",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="runs",
    )
    # The engine's TrainConfig as JSON (engine.training.config.TrainConfig.to_dict()).
    config = models.JSONField(default=dict)
    # What training and evaluation need from a worker, from the preset when the run was
    # created (engine.devices.Needs.to_dict(); empty: a CPU, as for runs recorded before
    # routing by worker kind). They are routed to a queue these name (runs.routing).
    needs = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    status_reason = models.TextField(blank=True)
    cancel_requested = models.BooleanField(default=False)
    # Lease: which worker works on the run and until when (renewed by heartbeat).
    lease_owner = models.CharField(max_length=200, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    # When the stage's own work last moved (a training step, a rollout round, a micro-batch;
    # the claim starts it), as opposed to the heartbeat thread renewing the lease: a stage
    # that makes no progress for its stall time loses its lease (runs.lease.Heartbeat).
    progress_at = models.DateTimeField(null=True, blank=True)
    # Claims of the current stage (reset at each hand-off).
    attempts = models.PositiveIntegerField(default=0)
    # Times the sweep queued the run again since a worker last claimed it.
    requeues = models.PositiveIntegerField(default=0)
    # Where the current claim writes its files (checkpoints, final model, published folder):
    # new for every claim, so a worker that lost its lease never overwrites its successor's.
    attempt_prefix = models.CharField(max_length=300, blank=True)
    # The trained model the training stage handed to evaluation and publishing.
    final_prefix = models.CharField(max_length=300, blank=True)
    current_step = models.PositiveIntegerField(default=0)
    total_steps = models.PositiveIntegerField(default=0)
    # Where the run's index and artifacts live in the artifacts bucket.
    artifacts_prefix = models.CharField(max_length=300, blank=True)
    # The project index the run searches (an immutable build on S3) and its prepared
    # questions (JSONL with a "split" of train or val per line), set while preparing.
    index_prefix = models.CharField(max_length=300, blank=True)
    questions_key = models.CharField(max_length=300, blank=True)
    # The final evaluation (the `sleuth eval --json` format): agent vs baselines.
    eval_report = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the owner's "run ended" mail was claimed for sending (runs.notifications): set
    # once, so a run never mails twice.
    notified_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class RunEvent(models.Model):
    class Kind(models.TextChoices):
        STATUS = "status"
        INFO = "info"
        WARNING = "warning"
        ERROR = "error"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.INFO)
    status = models.CharField(max_length=16, choices=Run.Status.choices, blank=True)
    message = models.TextField()

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%H:%M:%S} {self.message}"


class RunMetric(models.Model):
    """One training step's numbers (a metrics.jsonl record); one row per step, never two."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="metrics")
    step = models.PositiveIntegerField()
    data = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["step"]
        constraints = [models.UniqueConstraint(fields=["run", "step"], name="one_metric_per_step")]

    def __str__(self) -> str:
        return f"step {self.step}"


class TrajectorySample(models.Model):
    """A sample trajectory for the viewer: question → searches → chunks → answer → reward."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="samples")
    step = models.PositiveIntegerField()
    question_id = models.CharField(max_length=200)
    data = models.JSONField()

    class Meta:
        ordering = ["step", "id"]
        indexes = [models.Index(fields=["run", "step"])]

    def __str__(self) -> str:
        return f"step {self.step}: {self.question_id}"


class Checkpoint(models.Model):
    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="checkpoints")
    step = models.PositiveIntegerField()
    s3_prefix = models.CharField(max_length=500)
    # Validation numbers at this step (val/answer_score, val/golden_recall, val/pass@k…),
    # as evaluation.metrics measures them.
    metrics = models.JSONField(default=dict)
    is_final = models.BooleanField(default=False)
    # The published folder (model files, model card, agent bundle) and its archive.
    published_prefix = models.CharField(max_length=500, blank=True)
    archive_key = models.CharField(max_length=500, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["step"]
        constraints = [
            models.UniqueConstraint(fields=["run", "step"], name="one_checkpoint_per_step")
        ]

    def __str__(self) -> str:
        return f"{self.run} step {self.step}"
