"""The inference worker loads what the database names for a chat, never what its message says:
the broker is unauthenticated, and a forged message could name any S3 prefix."""

import pytest
from django.utils import timezone

from corpora.services import project_create
from runs.models import Checkpoint, Run

pytestmark = pytest.mark.django_db


def published_checkpoint(owner) -> Checkpoint:
    project = project_create(owner=owner, name="Filings")
    run = Run.objects.create(
        project=project,
        created_by=owner,
        name="first",
        status=Run.Status.SUCCEEDED,
        index_prefix=f"projects/{project.pk}/indexes/7",
        finished_at=timezone.now(),
    )
    return Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=f"projects/{project.pk}/runs/{run.pk}/checkpoints/final",
        is_final=True,
        published_prefix=f"projects/{project.pk}/runs/{run.pk}/published/filings-first",
    )


def test_a_chat_message_naming_other_prefixes_loads_the_checkpoints_own(alice, monkeypatch):
    from config.tasks import agent_chat
    from serving import inference

    checkpoint = published_checkpoint(alice)
    asked = {}
    monkeypatch.setattr(inference, "agent_answer", lambda **kw: asked.update(kw) or {"answer": "7"})
    forged = {
        "name": "filings-first",
        "checkpoint_id": checkpoint.pk,
        "published_prefix": "projects/999/runs/1/published/someone-elses",
        "index_prefix": "projects/999/indexes/1",
    }

    assert agent_chat(agent=forged, question="Revenue?", sampling={}) == {"answer": "7"}

    assert asked["agent"]["published_prefix"] == checkpoint.published_prefix
    assert asked["agent"]["index_prefix"] == checkpoint.run.index_prefix


def test_a_chat_message_naming_no_published_checkpoint_loads_nothing(alice, monkeypatch):
    from config.tasks import agent_chat
    from serving import inference

    checkpoint = published_checkpoint(alice)
    Run.objects.filter(pk=checkpoint.run_id).update(status=Run.Status.FAILED)
    monkeypatch.setattr(inference, "agent_answer", lambda **kw: pytest.fail("loaded"))

    for checkpoint_id in (checkpoint.pk, 10**9):
        with pytest.raises(ValueError, match="no published agent"):
            agent_chat(agent={"checkpoint_id": checkpoint_id}, question="q", sampling={})
