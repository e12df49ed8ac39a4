"""What a web process holds in loaded indexes is bounded in bytes (issue 68.6): the search
page and the playground's echo column load indexes through a cache of at most
SLEUTH_WEB_INDEX_MEMORY_MB, by each index's estimate (engine.search.store); an index past the
whole budget is neither downloaded nor loaded, and the page says why and what still works.
Workers keep loading it. On the real services (Postgres, S3, Redis)."""

import math

import pytest
from django.conf import settings
from django.urls import reverse

from core.s3 import s3_client
from corpora import indexing
from corpora.services import project_create
from engine.search.store import estimated_memory, read_manifest
from runs.models import Run
from tests.helpers.documents import parsed
from tests.helpers.runs import published_run

pytestmark = pytest.mark.django_db

# Enough text for an index of about a megabyte by its estimate: the budget is set in MB.
PAGES = [
    f"Zanzibar Shipping page {n}: "
    + " ".join(f"vessel{n}x{k} carried {k * n} tonnes of cargo{k}" for k in range(40))
    for n in range(1, 201)
]


@pytest.fixture(autouse=True)
def fresh_index_caches(monkeypatch, settings, tmp_path):
    """Each test's caches read its settings (a process makes its caches on first use), and
    keep their copies in a folder of the test's own (an earlier test's copy of the same
    prefix would be found on disk)."""
    monkeypatch.setattr(indexing, "_index_caches", {})
    settings.SLEUTH_WORK_DIR = str(tmp_path)


@pytest.fixture
def shipping(alice):
    """alice's project, indexed, and its index's estimated memory in MB."""
    project = project_create(owner=alice, name="Shipping")
    parsed(project, "ZANZIBAR_2023_10K", "Zanzibar", PAGES)
    indexing.project_index_build(project_id=project.pk)
    project.refresh_from_db()
    manifest = read_manifest(s3_client(), settings.S3_ARTIFACTS_BUCKET, project.index_prefix)
    megabytes = estimated_memory(manifest) / 2**20
    assert 1 < megabytes and megabytes != int(megabytes)  # a budget in MB falls either side
    return project, megabytes


def search(client, project, query: str) -> str:
    response = client.get(f"/projects/{project.pk}/search/", {"q": query})
    assert response.status_code == 200
    return response.content.decode().split('id="search-results"')[1]


def test_an_index_past_the_webs_budget_is_not_searched_and_the_page_says_why(
    shipping, client_alice, knob
):
    project, megabytes = shipping
    knob("SLEUTH_WEB_INDEX_MEMORY_MB", math.floor(megabytes))

    html = search(client_alice, project, "vessel7x3 cargo")

    assert 'id="results"' not in html
    assert "This project's index is too large to search on the website" in html
    assert (
        f"it would take about {round(megabytes)} MB of memory, past the "
        f"{math.floor(megabytes)} MB a web server keeps for indexes" in html
    )
    assert "Training runs still search it, and so does a trained agent, through the API" in html
    # Refused from its manifest: the web process did not even download it.
    web = indexing._cache(web=True)
    assert web.loaded() == [] and not web.folder(project.index_prefix).exists()
    # A worker (training, the API's answers) has no such budget and loads it.
    assert len(indexing.load_index(project.index_prefix)) == len(PAGES)


def test_an_index_within_the_budget_is_searched_and_stays_loaded(shipping, client_alice, knob):
    project, megabytes = shipping
    knob("SLEUTH_WEB_INDEX_MEMORY_MB", math.ceil(megabytes))

    html = search(client_alice, project, "vessel7x3 cargo")

    assert 'id="results"' in html and "vessel7x3" in html
    assert "too large" not in html
    web = indexing._cache(web=True)
    assert web.loaded() == [project.index_prefix]
    assert web.loaded_bytes <= web.max_memory_bytes == math.ceil(megabytes) * 2**20


def shipping_run(project, owner) -> Run:
    """A succeeded run of `project` searching its index, with a published agent (no worker
    answers for it: the echo column is computed by the web process alone)."""
    return published_run(project, owner, index_prefix=project.index_prefix, slug="shipping-first")


def ask_with_echo(client, run) -> str:
    response = client.post(
        reverse("serving:playground_ask", args=[run.pk]),
        {"question": "How much cargo did vessel7x3 carry?", "compare": "echo"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    return response.content.decode()


def test_the_playgrounds_echo_column_says_the_index_is_too_large(shipping, alice, client, knob):
    project, megabytes = shipping
    knob("SLEUTH_WEB_INDEX_MEMORY_MB", math.floor(megabytes))
    run = shipping_run(project, alice)
    client.force_login(alice)

    html = ask_with_echo(client, run)

    echo = html.split('data-role="comparison"')[1].split("</section>")[0]
    assert 'data-role="comparison" data-status="failed"' in html
    assert "The echo baseline could not run: this agent&#x27;s index is too large" in echo
    assert f"past the {math.floor(megabytes)} MB a web server keeps for indexes" in echo
    assert "The agent itself searches it on the inference workers" in echo
    assert 'data-role="agent" data-status="pending"' in html  # the agent was still asked


def test_within_the_budget_the_echo_column_shows_its_top_hit(shipping, alice, client, knob):
    project, megabytes = shipping
    knob("SLEUTH_WEB_INDEX_MEMORY_MB", math.ceil(megabytes))
    run = shipping_run(project, alice)
    client.force_login(alice)

    html = ask_with_echo(client, run)

    echo = html.split('data-role="comparison"')[1].split("</section>")[0]
    assert 'data-role="comparison" data-status="done"' in html
    assert "Top hit (echo writes no answer)" in echo and "vessel7x3" in echo
    assert indexing._cache(web=True).loaded() == [project.index_prefix]
