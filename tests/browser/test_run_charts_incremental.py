"""The run page's live chart in a real headless Chromium with incremental metrics: after
the first load, each poll asks only for the steps after the last one it holds (?since=)
and appends them, a key first logged later (validation) included."""

import pytest
from playwright.sync_api import expect

from corpora.services import project_create
from runs.models import Run, RunMetric
from runs.presets import preset_config
from tests.helpers.pages import step_done

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def project(alice):
    return project_create(owner=alice, name="Filings")


def test_the_live_chart_appends_the_steps_after_the_last_it_holds(
    page, live_server, project, log_in
):
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="Margins",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.TRAINING,
        total_steps=4,
    )
    for step in (1, 2):
        step_done(run, step, reward=0.1 * step)
    asked = []
    page.on("request", lambda r: asked.append(r.url) if "metrics.json" in r.url else None)
    log_in()
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(page.locator("#charts")).to_have_attribute("data-steps", "2", timeout=15_000)

    # Step 3 comes with the run's first validation number: a key the page has not seen yet.
    RunMetric.objects.create(run=run, step=3, data={"reward/total": 0.3, "val/accuracy": 0.45})

    expect(page.locator("#charts")).to_have_attribute("data-last-step", "3", timeout=15_000)
    reward = page.evaluate(
        """() => {
          const data = document.querySelector('figure.chart').chart.data;
          return [data.labels, data.datasets.find(d => d.label === 'reward/total').data];
        }"""
    )
    assert reward[0] == [1, 2, 3] and [round(v, 2) for v in reward[1]] == [0.1, 0.2, 0.3]
    validation = page.evaluate(
        """() => [...document.querySelectorAll('figure.chart')]
             .flatMap(f => (f.chart ? f.chart.data.datasets : []))
             .filter(d => d.label === 'val/accuracy').map(d => d.data)"""
    )
    assert validation == [[None, None, 0.45]]
    assert any(url.endswith("metrics.json?since=2") for url in asked)
    assert not any("since=" in url for url in asked[:1])  # the first load takes the whole run


def test_the_cold_starts_level_is_a_flat_line_under_the_validation_curve(
    page, live_server, project, log_in
):
    run = Run.objects.create(
        project=project,
        created_by=project.owner,
        name="Margins",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.SUCCEEDED,
        total_steps=2,
    )
    # Step 0: the trainer's validation right after the cold start, before any RL step.
    RunMetric.objects.create(run=run, step=0, data={"val/accuracy": 0.25})
    RunMetric.objects.create(run=run, step=1, data={"reward/total": 0.1})
    RunMetric.objects.create(run=run, step=2, data={"reward/total": 0.2, "val/accuracy": 0.4})
    log_in()
    page.goto(f"{live_server.url}/runs/{run.pk}/")
    expect(page.locator("#charts")).to_have_attribute("data-loaded", "true", timeout=15_000)

    lines = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('figure.chart')]
             .flatMap(f => (f.chart ? f.chart.data.datasets : []))
             .filter(d => d.label.startsWith('val/accuracy')).map(d => [d.label, d.data]))"""
    )
    assert lines == {
        "val/accuracy": [0.25, None, 0.4],
        "val/accuracy after the cold start": [0.25, 0.25, 0.25],
    }
    # Keys with nothing at step 0 get no such line.
    labels = page.evaluate(
        """() => [...document.querySelectorAll('figure.chart')]
             .flatMap(f => (f.chart ? f.chart.data.datasets : [])).map(d => d.label)"""
    )
    assert "reward/total after the cold start" not in labels
