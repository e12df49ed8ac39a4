"""A deleted run's, project's or account's copies leave every worker's disk at once, not when
they would be evicted (issue 68.7): the deletion purges this machine's copies and broadcasts
the purge to the connected workers (core.local_copies, config.tasks.purge_local_copies). The
worker is a real Celery worker process with a scratch folder of its own, as on a machine of
its own."""

import socket

import pytest

from accounts.services import account_delete
from config.celery import app
from core.local_copies import AGENT_COPIES, INDEX_COPIES, copies_root, purge_here
from corpora.services import project_create, project_delete
from engine.search.store import SOURCE
from runs.services import run_delete
from tests.helpers.runs import published_run, start_worker, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


def copy_of(root, kind: str, prefix: str):
    """A local copy as the caches leave one: a folder holding its source and `.complete`."""
    folder = root / kind / prefix.replace("/", "-")
    folder.mkdir(parents=True)
    (folder / SOURCE).write_text(prefix)
    (folder / ".complete").write_text("{}")
    return folder


@pytest.fixture
def worker_disk(tmp_path):
    """The scratch folder of a worker started for this test (it takes no queued task)."""
    disk = tmp_path / "worker"
    process = start_worker("purger", tmp_path / "worker.log", ["purge-none"], work_dir=disk)
    name = f"purger@{socket.gethostname()}"
    wait_for(lambda: app.control.ping([name], timeout=0.5), 60, "the worker did not start")
    yield disk
    process.terminate()
    process.wait(timeout=30)


def test_a_deleted_run_and_project_leave_the_workers_disk_and_others_stay(alice, bob, worker_disk):
    project, kept = project_create(owner=alice, name="Gone"), project_create(owner=bob, name="Kept")
    index = f"projects/{project.pk}/indexes/abc"
    run = published_run(project, alice, index_prefix=index, slug="agent")
    published = f"projects/{project.pk}/runs/{run.pk}/published/agent"
    agent_copy = copy_of(worker_disk, AGENT_COPIES, published)
    index_copy = copy_of(worker_disk, INDEX_COPIES, index)
    bobs_copy = copy_of(worker_disk, INDEX_COPIES, f"projects/{kept.pk}/indexes/abc")
    here = copy_of(copies_root(INDEX_COPIES).parent, INDEX_COPIES, index)  # the web's machine

    run_delete(run=run, user=alice)
    wait_for(lambda: not agent_copy.exists(), 20, "the run's agent stayed on the worker")
    assert index_copy.exists() and here.exists()  # the project's index is not the run's

    project_delete(project=project)
    wait_for(lambda: not index_copy.exists(), 20, "the project's index stayed on the worker")
    assert not here.exists() and bobs_copy.exists()


def test_a_deleted_accounts_copies_leave_the_workers_disk(alice, worker_disk):
    project = project_create(owner=alice, name="Mine")
    copy = copy_of(worker_disk, INDEX_COPIES, f"projects/{project.pk}/indexes/abc")

    account_delete(user=alice)

    wait_for(lambda: not copy.exists(), 20, "the account's index stayed on the worker")


def test_a_purge_of_anything_but_one_projects_folder_is_refused():
    for prefix in ("projects/", "projects/1", "", "runs/1/"):
        with pytest.raises(ValueError, match="refusing"):
            purge_here(prefix)
