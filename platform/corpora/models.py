"""A project holds a customer's documents, question sets and (later) runs."""

import base64

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings
from django.db import models
from django.utils import timezone


def secrets_fernet() -> Fernet:
    """The cipher for customers' secrets at rest: SLEUTH_SECRETS_KEY, or one derived from
    SECRET_KEY (HKDF, so the stored tokens say nothing about SECRET_KEY itself)."""
    if settings.SLEUTH_SECRETS_KEY:
        return Fernet(settings.SLEUTH_SECRETS_KEY)
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"sleuth customer secrets"
    ).derive(settings.SECRET_KEY.encode())
    return Fernet(base64.urlsafe_b64encode(derived))


class Project(models.Model):
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="projects"
    )
    name = models.CharField(max_length=120)
    created_at = models.DateTimeField(default=timezone.now)
    # The customer's own answer judge, if any: an endpoint, its model and the key for that
    # endpoint. The key is stored encrypted, never shown back, and bound to the URL: a new
    # URL drops it (runs.services.project_judge_set), so it only ever goes where it was meant.
    judge_base_url = models.URLField(max_length=500, blank=True)
    judge_model = models.CharField(max_length=200, blank=True)
    judge_api_key_encrypted = models.TextField(blank=True)
    # The S3 prefix of the newest index build of the project's documents (corpora.indexing):
    # what the search page searches; "" until the first build.
    index_prefix = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name

    @property
    def has_judge_api_key(self) -> bool:
        return bool(self.judge_api_key_encrypted)

    def set_judge_api_key(self, key: str) -> None:
        """Encrypt and keep `key` ("" forgets it); the caller saves."""
        token = secrets_fernet().encrypt(key.encode()).decode() if key else ""
        self.judge_api_key_encrypted = token

    def judge_api_key(self) -> str:
        """The decrypted key ("" when none); cryptography.fernet.InvalidToken when the
        secrets key changed since it was saved."""
        if not self.judge_api_key_encrypted:
            return ""
        return secrets_fernet().decrypt(self.judge_api_key_encrypted.encode()).decode()


class Document(models.Model):
    """One uploaded file. Parsing and indexing move it from uploaded to parsed to indexed,
    or to failed with an error written for the customer."""

    class Status(models.TextChoices):
        UPLOADED = "uploaded"
        PARSED = "parsed"
        INDEXED = "indexed"
        FAILED = "failed"

    class Kind(models.TextChoices):
        """What the content is, sniffed from its bytes (never trusted from the name)."""

        PDF = "pdf", "PDF"
        DOCX = "docx", "Word (.docx)"
        HTML = "html", "HTML"
        MARKDOWN = "markdown", "Markdown"
        TEXT = "text", "Plain text"
        PAGES_JSONL = "pages_jsonl", "Pages (JSONL)"

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="documents")
    name = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content_type = models.CharField(max_length=100)
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    s3_key = models.CharField(max_length=500, unique=True)
    entity = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.UPLOADED)
    error = models.TextField(blank=True)
    pages = models.PositiveIntegerField(null=True, blank=True)
    # Set by the worker that claims the parse, so two workers never parse the same document.
    parse_started_at = models.DateTimeField(null=True, blank=True)
    # Until when an uploaded document may wait to be claimed, or be parsed once claimed;
    # past it corpora.parse_deadlines.documents_sweep queues the parse again (a limited
    # number of times, counted here), then fails the document with the reason.
    parse_deadline = models.DateTimeField(null=True, blank=True)
    parse_requeues = models.PositiveSmallIntegerField(default=0)
    # When the parse was let into the shared queue (corpora.parse_slots): an account has at
    # most SLEUTH_PARSES_IN_FLIGHT_PER_ACCOUNT documents queued or being parsed, so one
    # customer's 500 uploads cannot sit ahead of everyone else's; its other uploads wait
    # here (None, "waiting for its turn") until one of its parses ends.
    parse_queued_at = models.DateTimeField(null=True, blank=True)
    # The parsed sections (JSONL, one per page or heading) in the artifacts bucket.
    sections_key = models.CharField(max_length=500, blank=True)
    # The domain pack (engine.packs) whose kind of document this one looks like, read from its
    # first pages when it is parsed: what the new-run form offers, never a choice made for you.
    looks_like = models.CharField(max_length=40, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["project", "sha256"], name="one_copy_per_project"),
        ]
        indexes = [
            # Every worker's sweep looks for unfinished parses (corpora.parse_deadlines,
            # corpora.parse_slots) every SLEUTH_RUN_SWEEP_SECONDS: only those rows, not the
            # whole table of parsed documents.
            models.Index(
                fields=["parse_queued_at", "created_at"],
                name="document_parse_unfinished",
                condition=models.Q(status="uploaded"),
            ),
        ]

    def __str__(self) -> str:
        return self.name


class QuestionSet(models.Model):
    """Questions with answers (and optionally golden evidence and an entity), imported whole."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="question_sets")
    name = models.CharField(max_length=255)
    s3_key = models.CharField(max_length=500, unique=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    # The echo recall of the set on the project's index (corpora.indexing): {"index_prefix",
    # "k", "recall" (None without evidence), "questions", "with_evidence", "measured",
    # "evidence_mapped", "evidence_total", "measured_at"}; {} until measured.
    echo_recall = models.JSONField(default=dict, blank=True)
    # A generated set is a draft until its owner reviews it: no run may use it meanwhile.
    needs_review = models.BooleanField(default=False)
    # Which generator wrote it ("offline": from the documents' tables; "teacher": a model).
    generated_by = models.CharField(max_length=16, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Question(models.Model):
    question_set = models.ForeignKey(
        QuestionSet, on_delete=models.CASCADE, related_name="questions"
    )
    position = models.PositiveIntegerField(help_text="order in the uploaded file, from 1")
    external_id = models.CharField(max_length=200, blank=True)
    question = models.TextField()
    answer = models.TextField()
    entity = models.CharField(max_length=200, blank=True)
    # [{"text": ..., "doc": ..., "page": 1-based}]
    evidence = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["position"]

    def __str__(self) -> str:
        return self.question[:80]


class QuestionGeneration(models.Model):
    """One press of "Generate questions from my documents": queued, then done (with its
    draft set) or failed (with the reason shown on the project page)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Generating"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    project = models.ForeignKey(
        Project, on_delete=models.CASCADE, related_name="question_generations"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    question_set = models.ForeignKey(
        QuestionSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"Question generation {self.pk} ({self.status})"
