"""Notifications (issue 15): a run's owner gets one email when the run succeeds, fails or is
cancelled, with the run page's validation numbers and an absolute link to the page. The end
of a run only queues the mail (after its transaction commits) on the mail queue of the real
broker; the mail task (a worker, in production) is run here, so the mail lands in this
process's outbox. Real Postgres, Redis from the test stack."""

import pytest
from django.db import transaction

from runs import lease, pipeline, stage, sweep
from runs.models import Run
from runs.presets import preset_config
from runs.services import run_cancel

# Real commits: the mail is queued only once the end of the run is committed.
pytestmark = pytest.mark.django_db(transaction=True)

SITE = "https://sleuth.example.com"
EVAL_REPORT = {
    "policies": {
        "echo@2": {"accuracy": 0.1, "answer_score": 0.3, "golden_recall": 0.22, "n": 20},
        "base": {"accuracy": 0.05, "answer_score": 0.2, "n": 20},  # no golden recall measured
        "runs/7/final": {"accuracy": 0.45, "answer_score": 0.6, "golden_recall": 0.353, "n": 20},
    }
}


@pytest.fixture(autouse=True)
def site(settings):
    settings.SITE_URL = SITE


def new_run(project, status: str, **fields) -> Run:
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="First agent",
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=status,
        **fields,
    )
    run.artifacts_prefix = f"projects/{project.pk}/runs/{run.pk}"
    run.save(update_fields=["artifacts_prefix"])
    return run


def run_here(run: Run, work) -> Run | None:
    """One pipeline stage on `run` in this process, as a worker runs it."""
    return stage.run_stage(run.pk, [run.status], run.status, work)


def deliver(mail_queue) -> int:
    """Run each queued run-end mail task here, as a worker would; how many there were."""
    from config import tasks

    taken = mail_queue.messages()
    for name, kwargs in taken:
        assert name == "config.tasks.run_end_mail"
        tasks.run_end_mail(**kwargs)
    return len(taken)


def test_a_succeeded_run_mails_its_owner_the_validation_numbers_and_a_link(
    project, alice, mail_queue, mailoutbox
):
    run = new_run(project, Run.Status.PUBLISHING, eval_report=EVAL_REPORT)

    def publish(run, heartbeat):
        stage.run_finish_fenced(
            run=run, owner=heartbeat.owner, status=Run.Status.SUCCEEDED, reason="Published."
        )
        assert mailoutbox == []  # never sent inside the stage

    assert run_here(run, publish).status == Run.Status.SUCCEEDED
    assert mailoutbox == []
    assert deliver(mail_queue) == 1

    [mail] = mailoutbox
    assert mail.to == ["alice@example.com"]
    assert mail.subject == 'Sleuth: your run "First agent" succeeded'
    assert 'Your run "First agent" in the project "Filings" succeeded.' in mail.body
    lines = mail.body.splitlines()
    # The run page's rows and labels, the trained agent first; golden recall where measured.
    rows = [line for line in lines if line.startswith("- ")]
    assert rows[0] == "- Trained agent: accuracy 45.0%, golden recall 35.3%"
    assert sorted(rows[1:]) == [
        "- Base model, untrained: accuracy 5.0%",
        "- One-shot BM25 (the question as the query), top 2: accuracy 10.0%, golden recall 22.0%",
    ]
    assert "(20 held-out questions)" in mail.body
    assert f"See the run: {SITE}/runs/{run.pk}/" in lines
    assert "Reason" not in mail.body
    run.refresh_from_db()
    assert run.notified_at is not None


def test_a_failed_run_mails_the_reason(project, mail_queue, mailoutbox):
    run = new_run(project, Run.Status.TRAINING)

    def train(run, heartbeat):
        raise stage.StageFailed("The question file has no validation questions.")

    assert run_here(run, train).status == Run.Status.FAILED
    assert deliver(mail_queue) == 1

    [mail] = mailoutbox
    assert mail.subject == 'Sleuth: your run "First agent" failed'
    assert "Reason: The question file has no validation questions." in mail.body
    assert "No validation numbers: the run ended before its evaluation." in mail.body
    assert f"{SITE}/runs/{run.pk}/" in mail.body


def cancel_on_the_web(run: Run) -> None:
    run_cancel(run=run, user=run.project.owner)  # queued: nobody holds it, it stops now


def cancel_on_the_worker(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)
    run_here(run, lambda run, heartbeat: pytest.fail("a cancelled run does no work"))


def cancel_by_the_sweep(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(cancel_requested=True)  # its worker was killed
    assert sweep.runs_sweep() == [run.pk]


@pytest.mark.parametrize(
    "cancel",
    [cancel_on_the_web, cancel_on_the_worker, cancel_by_the_sweep],
    ids=lambda f: f.__name__,
)
def test_a_cancelled_run_mails_its_owner(project, mail_queue, mailoutbox, cancel):
    run = new_run(project, Run.Status.QUEUED)

    cancel(run)

    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED
    assert mailoutbox == []  # not sent in the request or the stage
    assert deliver(mail_queue) == 1
    [mail] = mailoutbox
    assert mail.subject == 'Sleuth: your run "First agent" was cancelled'
    assert f"See the run: {SITE}/runs/{run.pk}/" in mail.body


def test_a_run_that_ends_twice_mails_once(project, mail_queue, mailoutbox):
    run = new_run(project, Run.Status.PUBLISHING, eval_report=EVAL_REPORT)
    owner = "worker-1"
    assert lease.lease_claim(run_id=run.pk, owner=owner, statuses=[Run.Status.PUBLISHING])
    stage.run_finish_fenced(run=run, owner=owner, status=Run.Status.SUCCEEDED, reason="Done.")

    # Late ends that lose the race: a task out of retries, a cancel from the page.
    assert pipeline.run_fail(run_id=run.pk, reason="Gave up.").status == Run.Status.SUCCEEDED
    cancel_on_the_web(run)
    queued = mail_queue.messages()
    assert len(queued) == 1

    # The same mail queued twice (or its task delivered twice) is sent once.
    from config import tasks

    name, kwargs = queued[0]
    assert tasks.run_end_mail(**kwargs) is True
    assert tasks.run_end_mail(**kwargs) is False
    assert len(mailoutbox) == 1


def test_an_end_that_rolls_back_queues_no_mail(project, mail_queue, mailoutbox):
    run = new_run(project, Run.Status.TRAINING)

    with pytest.raises(RuntimeError), transaction.atomic():
        pipeline.run_fail(run_id=run.pk, reason="Gave up.")
        raise RuntimeError("the transaction around the end rolled back")
    assert mail_queue.messages() == []

    pipeline.run_fail(run_id=run.pk, reason="Gave up.")
    assert deliver(mail_queue) == 1
    assert "Reason: Gave up." in mailoutbox[0].body


def test_a_mail_server_error_leaves_the_mail_to_the_task_retry(
    project, mail_queue, mailoutbox, settings
):
    run = new_run(project, Run.Status.TRAINING)
    pipeline.run_fail(run_id=run.pk, reason="Gave up.")
    [(_name, kwargs)] = mail_queue.messages()
    from config import tasks

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT, settings.EMAIL_TIMEOUT = "127.0.0.1", 1, 2
    with pytest.raises(OSError):
        tasks.run_end_mail(**kwargs)
    run.refresh_from_db()
    assert run.notified_at is None

    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
    assert tasks.run_end_mail(**kwargs) is True
    assert len(mailoutbox) == 1
