"""What a customer reads when a run fails or retries says what happened and what to do,
never the exception's text (internal paths, hosts, endpoints, queries: issue 14.13); the
operator's log keeps the real error, under a reference the reason quotes. Real Postgres
from the test stack; the errors are raised where storage or a bug would raise them."""

import logging
import re

import pytest
from botocore.exceptions import EndpointConnectionError

from runs import stage
from runs.models import Run, RunEvent

pytestmark = pytest.mark.django_db(transaction=True)

INTERNAL = "s3-internal.cluster.local"


@pytest.fixture
def run(training_run):
    return training_run


def training_stage(run: Run, work) -> Run | None:
    return stage.run_stage(run.pk, [Run.Status.TRAINING], Run.Status.TRAINING, work)


def test_an_unexpected_error_fails_the_run_with_a_reference_not_the_error_text(run, caplog):
    def work(run, heartbeat):
        raise FileNotFoundError(f"/var/lib/sleuth/work/run-{run.pk}/state.pt on {INTERNAL}")

    with caplog.at_level(logging.ERROR, logger="runs.stage"):
        finished = training_stage(run, work)

    assert finished.status == Run.Status.FAILED
    assert "/var/lib" not in finished.status_reason and INTERNAL not in finished.status_reason
    assert "FileNotFoundError" not in finished.status_reason
    assert "contact support" in finished.status_reason
    reference = re.search(r"reference (\w+)", finished.status_reason).group(1)
    logged = [r for r in caplog.records if reference in r.getMessage()]
    assert logged and INTERNAL in str(logged[0].exc_info[1])


def test_unreachable_storage_is_retried_with_a_message_that_names_no_endpoint(run):
    def work(run, heartbeat):
        raise EndpointConnectionError(endpoint_url=f"http://{INTERNAL}:8333/artifacts")

    with pytest.raises(stage.TransientError) as raised:
        training_stage(run, work)

    warning = run.events.filter(kind=RunEvent.Kind.WARNING).last()
    for text in (str(raised.value), warning.message):
        assert "Could not reach the artifact store" in text
        assert INTERNAL not in text and "8333" not in text
