"""Reads for serving: a customer's tokens and published agents, scoped to their owner."""

from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet

from runs.models import Checkpoint, Run

from .models import ApiToken


def api_tokens_for_user(*, user) -> QuerySet[ApiToken]:
    return ApiToken.objects.filter(user=user)


@dataclass(frozen=True)
class PublishedAgent:
    """A succeeded run's published final checkpoint, by the name /v1 calls it."""

    name: str
    checkpoint_id: int
    run_id: int
    project: str
    published_prefix: str  # the published folder on S3 (model files and agent.json)
    index_prefix: str  # the project index the run searched
    created: datetime


def published_agents(*, user) -> dict[str, PublishedAgent]:
    """`user`'s published agents by name, newest first. An agent's name is its published
    folder's (the project's and run's names, slugified); when several of the user's agents
    share one, the newest keeps it and each older one is `<name>-run<run id>`."""
    checkpoints = (
        Checkpoint.objects.filter(
            is_final=True,
            run__status=Run.Status.SUCCEEDED,
            run__project__owner=user,
        )
        .exclude(published_prefix="")
        .select_related("run", "run__project")
        .order_by("-run__finished_at", "-run_id")
    )
    agents: dict[str, PublishedAgent] = {}
    for checkpoint in checkpoints:
        run = checkpoint.run
        name = checkpoint.published_prefix.rstrip("/").rsplit("/", 1)[-1]
        if name in agents:
            name = f"{name}-run{run.pk}"
        agents[name] = PublishedAgent(
            name=name,
            checkpoint_id=checkpoint.pk,
            run_id=run.pk,
            project=run.project.name,
            published_prefix=checkpoint.published_prefix,
            index_prefix=run.index_prefix,
            created=run.finished_at or checkpoint.created_at,
        )
    return agents


def published_checkpoint(*, checkpoint_id: int) -> dict[str, str | int] | None:
    """Where a published agent's files are, from the database: its checkpoint id, published
    folder and index, or None when the checkpoint is no succeeded run's published final one.
    The inference worker reads them here rather than from the queued message: the broker is
    no authority on which S3 prefixes a worker downloads."""
    checkpoint = (
        Checkpoint.objects.filter(pk=checkpoint_id, is_final=True, run__status=Run.Status.SUCCEEDED)
        .exclude(published_prefix="")
        .select_related("run")
        .first()
    )
    if checkpoint is None:
        return None
    return {
        "checkpoint_id": checkpoint.pk,
        "published_prefix": checkpoint.published_prefix,
        "index_prefix": checkpoint.run.index_prefix,
    }
