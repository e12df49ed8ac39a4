"""Per-account limits on costly work (issue 68.6): reward previews, uploaded files (documents
and question files, each file of a multi-file upload counting) and new projects. Past a limit
the next request is a 429 with Retry-After (the page, the upload's JSON, or /v1's OpenAI-shaped
error) and nothing of it is created, stored or queued; what was stored before stays; another
account keeps its own count; the website and /v1 share one count per account."""

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from corpora.models import Document, Project, QuestionSet
from corpora.services import project_create
from serving.services import api_token_create

pytestmark = pytest.mark.django_db

PREVIEW = {
    "preset": "quick-cpu",
    "question_text": "What was 3M's FY2018 capital expenditure?",
    "ground_truth": "$1577.00",
    "sample_answers": "$1,577 million",
    "searched": "on",
    "found_golden": "on",
}
QUESTIONS = "\n".join(
    json.dumps({"question": f"What was ACME's revenue in {year}?", "answer": "seven"})
    for year in (2019, 2020, 2021)
).encode()


@pytest.fixture
def limits(settings):
    settings.SLEUTH_PREVIEW_RATE_LIMIT = (2, 600)
    settings.SLEUTH_UPLOAD_RATE_LIMIT = (3, 3600)
    settings.SLEUTH_PROJECT_RATE_LIMIT = (2, 3600)
    return settings


@pytest.fixture
def signed_in():
    """signed_in(user) -> a test client with `user`'s session."""

    def make(user):
        made = Client()
        made.force_login(user)
        return made

    return make


@pytest.fixture
def api():
    """api(user)(method, url, data, **extra): a /v1 request with a token of `user`'s (and no
    session)."""

    def make(user):
        _, raw = api_token_create(user=user, name="tests")
        client = Client()

        def call(method: str, url: str, data=None, **extra):
            return getattr(client, method)(url, data, HTTP_AUTHORIZATION=f"Bearer {raw}", **extra)

        return call

    return make


def pdf(i: int) -> SimpleUploadedFile:
    """A small PDF, each `i` different (a project refuses the same file twice)."""
    return SimpleUploadedFile(
        f"filing-{i}.pdf", f"%PDF-1.4\n%{i}\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n".encode()
    )


def upload(client, project, *files, json=True):
    headers = {"Accept": "application/json"} if json else {}
    return client.post(
        f"/projects/{project.pk}/documents/upload/", {"files": list(files)}, headers=headers
    )


def upload_questions(client, project, name="qa.jsonl"):
    file = SimpleUploadedFile(name, QUESTIONS)
    return client.post(f"/projects/{project.pk}/question-sets/upload/", {"file": file})


def api_upload(call, project, file, purpose="user_data"):
    return call("post", "/v1/files", {"file": file, "purpose": purpose, "project": project.pk})


def assert_429(response, window: int, *words: str):
    assert response.status_code == 429
    assert response["Retry-After"] == str(window)
    text = response.content.decode()
    for word in words:
        assert word in text


def assert_api_429(response, window: int):
    assert response.status_code == 429 and response["Retry-After"] == str(window)
    error = response.json()["error"]
    assert (error["type"], error["code"]) == ("rate_limit_error", "rate_limit_exceeded")
    assert f"Try again in {window // 60} minutes" in error["message"]
    return error["message"]


# --- reward previews -------------------------------------------------------------------------


@pytest.fixture
def queued(monkeypatch):
    """The previews handed to the queue (none reaches a broker)."""
    from runs import services

    handed = []
    monkeypatch.setattr(services, "enqueue", lambda task, **kw: handed.append(kw["args"]))
    return handed


def alices_three_previews_and_bobs_one(client_alice, project, bob, signed_in):
    """(alice's first two answers, her third, bob's one on a project of his)."""
    url = f"/projects/{project.pk}/runs/reward-preview/"
    answered = [client_alice.post(url, PREVIEW) for _ in range(2)]
    refused = client_alice.post(url, PREVIEW)
    bobs_project = project_create(owner=bob, name="Bob's")
    bobs = signed_in(bob).post(f"/projects/{bobs_project.pk}/runs/reward-preview/", PREVIEW)
    return answered, refused, bobs


def test_past_the_preview_limit_the_next_preview_is_a_429_fragment_and_nothing_is_queued(
    limits, client_alice, project, bob, signed_in, queued
):
    answered, refused, bobs = alices_three_previews_and_bobs_one(
        client_alice, project, bob, signed_in
    )

    assert [r.status_code for r in answered] == [200, 200]
    assert all("reward-preview/" in r.content.decode() for r in answered)  # pending: polls
    assert_429(refused, 600, "limit of 2 reward previews per 10 minutes", "Try again in 10 min")
    assert 'id="reward-preview-throttled"' in refused.content.decode()
    assert not re.search(r'hx-get="/projects/\d+/runs/reward-preview/', refused.content.decode())
    assert bobs.status_code == 200  # another account keeps its own count
    assert len(queued) == 3  # alice's two and bob's one: the refused preview queued nothing


def test_past_the_previews_in_flight_the_next_is_a_429_until_one_ends(
    settings, client_alice, project, bob, signed_in, queued, monkeypatch
):
    # Within the rate limit, a burst of previews would all wait on the workers' queue ahead
    # of other accounts' parsing: an account has at most its cap queued or scoring.
    from runs import services

    settings.SLEUTH_PREVIEWS_IN_FLIGHT_PER_ACCOUNT = 2
    answered, refused, bobs = alices_three_previews_and_bobs_one(
        client_alice, project, bob, signed_in
    )
    url = f"/projects/{project.pk}/runs/reward-preview/"

    assert [r.status_code for r in answered] == [200, 200]
    assert_429(refused, 5, "2 reward previews being scored", "at once (2)")
    assert bobs.status_code == 200  # another account has its own count
    assert len(queued) == 3  # the refused preview queued nothing

    # One scored (the offline judge), one given up by its page: both give their place back.
    assert services.reward_preview_run(preview_id=queued[0][0]) == "done"
    assert client_alice.post(url, PREVIEW).status_code == 200
    monkeypatch.setattr(services, "PREVIEW_PICKUP_SECONDS", 0)
    given_up = services.reward_preview_get(
        preview_id=queued[1][0], user=project.owner, project=project
    )
    assert given_up["status"] == "timed_out"
    assert client_alice.post(url, PREVIEW).status_code == 200
    assert client_alice.post(url, PREVIEW).status_code == 429


def test_the_run_page_shows_a_refused_preview_where_the_scores_would_go(client_alice, project):
    page = client_alice.get(f"/projects/{project.pk}/runs/new/").content.decode()

    assert "js/reward_preview.js" in page and 'id="reward-preview"' in page


# --- uploads ---------------------------------------------------------------------------------


def test_each_file_of_an_upload_counts_and_what_was_stored_before_the_limit_stays(
    limits, client_alice, alice
):
    project = project_create(owner=alice, name="Filings")

    first = upload(client_alice, project, pdf(1), pdf(2))
    second = upload(client_alice, project, pdf(3), pdf(4), pdf(5))
    third = upload(client_alice, project, pdf(6))

    assert first.status_code == 200
    assert_429(second, 3600, "limit of 3 uploaded files per hour")
    results = second.json()["files"]
    assert [r["ok"] for r in results] == [True, False, False]
    assert "filing-4.pdf was not uploaded" in results[1]["error"]
    assert results[1]["error"].endswith("Try again in 60 minutes.")
    assert_429(third, 3600)
    stored = sorted(Document.objects.filter(project=project).values_list("name", flat=True))
    assert stored == ["filing-1.pdf", "filing-2.pdf", "filing-3.pdf"]


def test_without_javascript_a_refused_upload_is_a_429_page_naming_the_files_that_wait(
    limits, client_alice, alice
):
    project = project_create(owner=alice, name="Filings")

    response = upload(client_alice, project, *[pdf(i) for i in range(5)], json=False)

    assert_429(
        response,
        3600,
        "These files were not uploaded: filing-3.pdf, filing-4.pdf.",
        "Try again in 60 minutes",
        "Uploaded filing-0.pdf.",  # what was stored is said too
    )
    assert Document.objects.filter(project=project).count() == 3


def test_question_files_count_with_documents_and_a_refused_one_imports_nothing(
    limits, client_alice, alice, bob, signed_in
):
    project = project_create(owner=alice, name="Filings")
    upload(client_alice, project, pdf(1), pdf(2))

    imported = upload_questions(client_alice, project)
    refused = upload_questions(client_alice, project, name="more.jsonl")
    bobs_project = project_create(owner=bob, name="Bob's")
    bobs = upload_questions(signed_in(bob), bobs_project)

    assert imported.status_code == 302
    assert_429(refused, 3600, "more.jsonl was not imported", "Try again in 60 minutes")
    assert list(QuestionSet.objects.filter(project=project).values_list("name", flat=True)) == [
        "qa.jsonl"
    ]
    assert bobs.status_code == 302 and QuestionSet.objects.filter(project=bobs_project).exists()


def test_the_website_and_v1_share_one_upload_count(limits, client_alice, alice, bob, api):
    project = project_create(owner=alice, name="Filings")
    as_alice = api(alice)
    upload(client_alice, project, pdf(1), pdf(2))

    through_api = api_upload(as_alice, project, pdf(3))
    refused_api = api_upload(as_alice, project, pdf(4))
    refused_questions = api_upload(
        as_alice, project, SimpleUploadedFile("qa.jsonl", QUESTIONS), purpose="fine-tune"
    )
    refused_site = upload(client_alice, project, pdf(5))
    bobs_project = project_create(owner=bob, name="Bob's")
    bobs = api_upload(api(bob), bobs_project, pdf(4))

    assert through_api.status_code == 200
    assert "filing-4.pdf was not stored" in assert_api_429(refused_api, 3600)
    assert_api_429(refused_questions, 3600)
    assert_429(refused_site, 3600)
    assert Document.objects.filter(project=project).count() == 3
    assert not QuestionSet.objects.filter(project=project).exists()
    assert bobs.status_code == 200


def test_uploads_through_v1_count_against_the_website_too(limits, client_alice, alice, api):
    project = project_create(owner=alice, name="Filings")
    as_alice = api(alice)

    statuses = [api_upload(as_alice, project, pdf(i)).status_code for i in range(3)]
    refused = upload(client_alice, project, pdf(9))

    assert statuses == [200, 200, 200]
    assert_429(refused, 3600, "filing-9.pdf was not uploaded")
    assert Document.objects.filter(project=project).count() == 3


# --- projects --------------------------------------------------------------------------------


def test_past_the_project_limit_the_form_is_a_429_page_and_no_project_is_made(
    limits, client_alice, alice, bob, signed_in
):
    made = [client_alice.post("/projects/", {"name": f"P{i}"}) for i in range(2)]
    refused = client_alice.post("/projects/", {"name": "One too many"})
    invalid = client_alice.post("/projects/", {"name": ""})  # a form error counts nothing
    bobs = signed_in(bob).post("/projects/", {"name": "Bob's"})

    assert [r.status_code for r in made] == [302, 302]
    assert_429(refused, 3600, "limit of 2 new projects per hour", "No project was created")
    assert invalid.status_code == 200
    assert sorted(Project.objects.filter(owner=alice).values_list("name", flat=True)) == [
        "P0",
        "P1",
    ]
    assert bobs.status_code == 302


def test_the_website_and_v1_share_one_project_count(limits, client_alice, alice, bob, api):
    as_alice = api(alice)

    site = client_alice.post("/projects/", {"name": "On the site"})
    through_api = as_alice("post", "/v1/projects", {"name": "Through /v1"}, **JSON)
    refused_api = as_alice("post", "/v1/projects", {"name": "One too many"}, **JSON)
    refused_site = client_alice.post("/projects/", {"name": "One more"})
    bobs = api(bob)("post", "/v1/projects", {"name": "Bob's"}, **JSON)

    assert (site.status_code, through_api.status_code) == (302, 200)
    assert "No project was created" in assert_api_429(refused_api, 3600)
    assert_429(refused_site, 3600)
    assert Project.objects.filter(owner=alice).count() == 2
    assert bobs.status_code == 200


JSON = {"content_type": "application/json"}
