"""One customer's queued runs cannot starve another's (issue 14.5): a run's start task
starts the fairest queued run (runs.selectors.run_next_to_start), the one whose owner has
the fewest runs started, oldest first.

The broker hands out start tasks first in, first out; the tests play it, taking the tasks
in the order the runs were queued, and play each worker up to its claim (a worker holds
the run it starts while it prepares and trains it)."""

import pytest
from django.test import override_settings

from corpora.models import Document, Question, QuestionSet
from corpora.services import project_create
from runs.lease import lease_claim, worker_name
from runs.models import Run
from runs.selectors import run_next_to_start
from runs.services import run_create

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.usefixtures("_roomy_limits"),
]


@pytest.fixture
def _roomy_limits():
    with override_settings(SLEUTH_MAX_ACTIVE_RUNS=10, SLEUTH_WORKER_MINUTES=100_000):
        yield


def queue_runs(user, name: str, count: int) -> list[Run]:
    project = project_create(owner=user, name=name)
    Document.objects.create(
        project=project,
        name="doc.txt",
        kind="text",
        content_type="text/plain",
        size=10,
        sha256=f"{project.pk:064d}",
        s3_key=f"projects/{project.pk}/documents/1/doc.txt",
        status=Document.Status.PARSED,
    )
    questions = QuestionSet.objects.create(
        project=project, name="qs.jsonl", s3_key=f"qs/{project.pk}", size=1
    )
    for position in (1, 2):
        Question.objects.create(
            question_set=questions, position=position, question="q?", answer="seven"
        )
    return [
        run_create(project=project, user=user, name=f"{name} {i}", question_set=questions)
        for i in range(1, count + 1)
    ]


def start(task_run_id: int) -> Run:
    """What a worker does with a start task up to its work: pick, claim, mark preparing."""
    run = lease_claim(
        run_id=run_next_to_start(run_id=task_run_id),
        owner=worker_name(),
        statuses=[Run.Status.QUEUED, Run.Status.PREPARING],
    )
    assert run is not None
    Run.objects.filter(pk=run.pk).update(status=Run.Status.PREPARING)
    return run


def test_another_customers_single_run_is_not_behind_all_of_one_customers_queue(alice, bob):
    alices = queue_runs(alice, "Alice", 6)
    bobs = queue_runs(bob, "Bob", 1)
    tasks = [run.pk for run in alices + bobs]  # the broker's order

    started = [start(task).name for task in tasks[:2]]

    assert started == ["Alice 1", "Bob 1"]


def test_every_queued_run_is_started_once_whichever_task_starts_it(alice, bob):
    alices = queue_runs(alice, "Alice", 4)
    bobs = queue_runs(bob, "Bob", 2)
    tasks = [run.pk for run in alices + bobs]

    started = [start(task).name for task in tasks]

    assert sorted(started) == sorted(run.name for run in alices + bobs)
    assert started[:4] == ["Alice 1", "Bob 1", "Alice 2", "Bob 2"]  # turns, while both wait
    assert not Run.objects.filter(status=Run.Status.QUEUED).exists()


def test_a_task_for_a_run_past_the_queue_works_on_that_run(alice, bob):
    (resumed,) = queue_runs(alice, "Alice", 1)
    Run.objects.filter(pk=resumed.pk).update(status=Run.Status.PREPARING)  # swept, to resume
    queue_runs(bob, "Bob", 1)

    assert run_next_to_start(run_id=resumed.pk) == resumed.pk
