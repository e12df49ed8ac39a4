"""Web-side fixtures: alice owns things, bob is another customer, charlie is staff."""

import pytest
from django.core.cache import cache

from tests.helpers.judges import LoggingServer
from tests.helpers.judges_platform import OPERATOR_KEY, PLATFORM_KEY, QUESTION


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    """Rate-limit counters live in Redis and would leak from one test into the next."""
    try:
        cache.clear()
    except Exception:  # engine-only runs start no Redis; those tests do not use the cache
        pass


@pytest.fixture
def alice(django_user_model):
    return django_user_model.objects.create_user(email="alice@example.com", password="pw-alice-1")


@pytest.fixture
def bob(django_user_model):
    return django_user_model.objects.create_user(email="bob@example.com", password="pw-bob-1")


@pytest.fixture
def charlie(django_user_model):
    return django_user_model.objects.create_superuser(
        email="charlie@example.com", password="pw-charlie-1"
    )


@pytest.fixture
def preview_here(knob):
    """Reward previews scored in the test process, as the preview task scores them on a
    worker, so that a test's settings and local judge servers apply: previews go to a queue
    no worker serves. preview_here(client, project, data) posts the form, runs the task's
    service and returns the page the form's poll then gets."""
    import re

    from runs.services import reward_preview_run

    knob("SLEUTH_PREVIEW_QUEUE", "previews-scored-by-the-test")

    def preview(client, project, data: dict) -> str:
        posted = client.post(f"/projects/{project.pk}/runs/reward-preview/", data)
        html = posted.content.decode()
        poll = re.search(r'hx-get="(/projects/\d+/runs/reward-preview/([\w-]+)/)"', html)
        if poll is None:
            return html  # the form's errors
        reward_preview_run(preview_id=poll.group(2))
        return client.get(poll.group(1)).content.decode()

    return preview


@pytest.fixture
def client_alice(client, alice):
    """A test client signed in as alice."""
    client.force_login(alice)
    return client


@pytest.fixture
def project(alice):
    """alice's project with one parsed filing (no file behind it: pages only list it)."""
    from corpora.models import Document
    from corpora.services import project_create

    project = project_create(owner=alice, name="Filings")
    Document.objects.create(
        project=project,
        name="3M_2018_10K.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=3,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/3m.pdf",
        status=Document.Status.PARSED,
    )
    return project


@pytest.fixture
def training_run(alice):
    """alice's run, training on the quick-cpu preset, in a project of its own."""
    from corpora.services import project_create
    from runs.models import Run
    from runs.presets import preset_config

    project = project_create(owner=alice, name="Filings")
    return Run.objects.create(
        project=project,
        created_by=alice,
        name="Run",
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.TRAINING,
    )


# The judge tests' fixtures (tests/platform/test_judge_platform.py, test_judge_budget.py): judges
# are real local HTTP servers that log every request (tests/helpers/judges.py).


@pytest.fixture
def servers():
    started = []

    def start() -> LoggingServer:
        started.append(LoggingServer())
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def operator_judge(servers, settings, monkeypatch):
    """The platform's keys are in the environment (as in production) and the operator
    offers one judge, "house", whose key is in HOUSE_JUDGE_KEY."""
    server = servers()
    monkeypatch.setenv("SLEUTH_JUDGE_API_KEY", PLATFORM_KEY)
    monkeypatch.setenv("HOUSE_JUDGE_KEY", OPERATOR_KEY)
    settings.SLEUTH_JUDGES = {
        "house": {
            "base_url": server.base_url,
            "model": "house-model",
            "api_key_env": "HOUSE_JUDGE_KEY",
        }
    }
    return server


@pytest.fixture
def local_urls(settings):
    settings.SLEUTH_JUDGE_ALLOW_PRIVATE_URLS = True


@pytest.fixture
def preview(preview_here):
    """preview(client, project, judge): the preview's result page, scored as the preview
    task scores it on a worker."""

    def score(client, project, judge="own"):
        return preview_here(
            client,
            project,
            {
                "preset": "quick-cpu",
                "judge": judge,
                "question_text": QUESTION,
                "ground_truth": "$1577.00",
                "sample_answers": "$1,577 million",
                "searched": "on",
                "found_golden": "on",
            },
        )

    return score
