"""Every URL that takes an object id serves its owner only. Another customer (bob) and even
staff (charlie) get a 404, as if it did not exist; nobody signed in is sent to log in."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from corpora.models import Document, Project, Question, QuestionSet
from corpora.services import project_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def things(alice):
    project = project_create(owner=alice, name="Alice's filings")
    document = Document.objects.create(
        project=project,
        name="a.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=3,
        sha256="0" * 64,
        s3_key="projects/x/a.pdf",
        entity="ACME",
    )
    question_set = QuestionSet.objects.create(
        project=project, name="qa.jsonl", s3_key="projects/x/qa.jsonl", size=3
    )
    Question.objects.create(question_set=question_set, position=1, question="Q?", answer="A")
    return {"p": project.pk, "d": document.pk, "q": question_set.pk}


def requests(ids):
    """(method, url, data) for every object URL; POST bodies are valid ones."""
    text = lambda: SimpleUploadedFile("new.txt", b"new text")  # noqa: E731
    qa = lambda: SimpleUploadedFile("qa.jsonl", b'{"question": "Q?", "answer": "A"}\n')  # noqa: E731
    return [
        ("get", f"/projects/{ids['p']}/", None),
        ("get", f"/projects/{ids['p']}/documents/", None),
        ("post", f"/projects/{ids['p']}/documents/upload/", lambda: {"files": [text()]}),
        ("post", f"/projects/{ids['p']}/question-sets/upload/", lambda: {"file": qa()}),
        ("get", f"/documents/{ids['d']}/entity/?edit=1", None),
        ("post", f"/documents/{ids['d']}/entity/", lambda: {"entity": "Changed"}),
        ("get", f"/question-sets/{ids['q']}/", None),
        ("post", f"/documents/{ids['d']}/delete/", lambda: {}),
        ("post", f"/question-sets/{ids['q']}/delete/", lambda: {}),
    ]


def call(client, method, url, data):
    return getattr(client, method)(url, data() if data else None)


@pytest.mark.parametrize("intruder", ["bob", "charlie"])
def test_another_customer_and_staff_get_404_on_every_url(client, things, intruder, request):
    client.force_login(request.getfixturevalue(intruder))

    statuses = {url: call(client, m, url, d).status_code for m, url, d in requests(things)}

    assert set(statuses.values()) == {404}, statuses
    assert Document.objects.get().entity == "ACME"
    assert Document.objects.count() == 1 and QuestionSet.objects.count() == 1


def test_the_owner_reaches_every_url(client, things, alice):
    client.force_login(alice)

    statuses = {url: call(client, m, url, d).status_code for m, url, d in requests(things)}

    assert set(statuses.values()) <= {200, 302}, statuses
    assert not Document.objects.filter(pk=things["d"]).exists()  # the delete went through


def test_nobody_signed_in_is_sent_to_log_in(client, things):
    for method, url, data in requests(things):
        response = call(client, method, url, data)
        assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
    assert Project.objects.count() == 1 and Document.objects.count() == 1


@pytest.mark.parametrize("viewer", ["bob", "charlie"])
def test_the_project_list_shows_only_ones_own_projects(client, things, viewer, request):
    user = request.getfixturevalue(viewer)
    project_create(owner=user, name=f"{viewer}'s own")
    client.force_login(user)

    page = client.get("/projects/").content.decode()

    assert f"{viewer}&#x27;s own" in page and "Alice&#x27;s filings" not in page
