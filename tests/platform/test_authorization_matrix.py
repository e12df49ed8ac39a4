"""The authorization matrix: every URL of the project × who asks (nobody signed in, the owner,
another customer, view-only staff, a superuser) × GET and POST, each against a rule of the
table below. The URLs are read from the URL conf itself, so a new URL fails the suite until
someone writes down who may use it.

The objects in the URLs (project, document, question set, run, checkpoint, API token,
published agent, and the question set and run as /v1's files and fine-tuning jobs) are
alice's. Anyone else gets a 404 for them, staff and superusers included, as if they did not
exist; a method the view refuses is a 405 before any lookup, so it discloses nothing. Nobody
but alice changes anything of hers, whatever the answer.

Left out, with the reason: the Django admin's own pages but its index (admin:*): the admin
checks each model's permissions itself, and test_admin_permissions.py covers what view-only
staff may do there. Static files are served by WhiteNoise, outside the URL conf."""

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from corpora.models import Document, Project, Question, QuestionSet
from corpora.services import project_create
from runs.models import Checkpoint, Run
from runs.presets import preset_config
from serving.models import ApiToken
from serving.services import api_token_create

pytestmark = pytest.mark.django_db

PRINCIPALS = ("anonymous", "owner", "customer", "staff", "superuser")
METHODS = ("GET", "POST")
# Requests come from outside the machine: /healthz/details opens to loopback probes.
REMOTE = {"REMOTE_ADDR": "203.0.113.7"}


@dataclass(frozen=True)
class Redirect:
    """A 302 to a page whose address starts with `to`."""

    to: str


LOGIN = Redirect("/accounts/login/?next=")
ADMIN_LOGIN = Redirect("/admin/login/?next=")
HEALTH = frozenset({200, 503})  # the details, whatever their verdict on this machine


@dataclass(frozen=True)
class Rule:
    """Who gets what. `kind` says how the other principals' answers follow from the owner's:
    owned: alice's object; everyone else signed in gets 404 (or the owner's 405).
    account: the asker's own things (their projects, their tokens): the same for each.
    public: the same for everyone (`signed_in` where signed-in users get something else).
    staff: 403 for anyone not staff, nobody signed in included.
    admin: Django's admin; anyone not staff is sent to its login page.
    Nobody signed in is sent to log in for owned and account URLs; with `token` (the /v1
    API, which takes a personal API token and never the session) the answer is 401 instead,
    and the method is checked first. `body` gives an API POST's JSON body from alice's
    objects; other POSTs are an empty form."""

    kind: str
    get: object
    post: object
    signed_in: dict = field(default_factory=dict)
    token: bool = False
    body: Callable[[dict], dict] | None = None

    def expected(self, principal: str, method: str):
        own = self.get if method == "GET" else self.post
        if self.kind == "public":
            if principal != "anonymous" and method in self.signed_in:
                return self.signed_in[method]
            return own
        if self.kind == "admin":
            return own if principal in ("staff", "superuser") else ADMIN_LOGIN
        if self.kind == "staff":
            return own if principal in ("staff", "superuser") else 403
        if own == 405 and self.token:  # django-ninja checks the method before the token
            return 405
        if principal == "anonymous":
            return 401 if self.token else LOGIN
        if own == 405:  # login_required first, then the method, before any lookup
            return 405
        if self.kind == "account" or principal == "owner":
            return own
        return 404


def owned(get, post, **extra) -> Rule:
    return Rule("owned", get, post, **extra)


def account(get, post, **extra) -> Rule:
    return Rule("account", get, post, **extra)


def public(get, post, **signed_in) -> Rule:
    return Rule("public", get, post, signed_in)


def chat(things: dict) -> dict:
    return {"model": things["model"], "messages": [{"role": "user", "content": "Revenue?"}]}


# POST bodies are empty: the matrix asks who may reach a view, not whether a form is valid
# (test_isolation.py posts valid bodies). An owner's empty POST shows the form again (200),
# or acts where nothing needs filling in (a delete, a cancel: 302 back to a page).
RULES: dict[str, Rule] = {
    "home": public(200, 200),
    "healthz": public(200, 200),
    "healthz_details": Rule("staff", HEALTH, HEALTH),
    "admin:index": Rule("admin", 200, 200),
    "accounts:signup": public(410, 410),  # a token that is no invite
    "accounts:login": public(200, 200, GET=302, POST=302),
    "accounts:logout": public(405, 302),
    "accounts:account_delete": account(200, 200),
    "accounts:password_reset": public(200, 200),
    "accounts:password_reset_done": public(200, 405),
    "accounts:password_reset_confirm": public(200, 200),  # a link that is no longer valid
    "accounts:password_reset_complete": public(200, 405),
    "corpora:project_list": account(200, 200),
    "corpora:project_detail": owned(200, 405),
    "corpora:project_delete": owned(200, 302),
    "corpora:project_search": owned(200, 405),  # no index yet: "indexing…"
    "corpora:document_table": owned(200, 405),
    "corpora:document_upload": owned(405, 302),
    "corpora:question_set_upload": owned(405, 302),
    "corpora:document_entity": owned(302, 302),  # without htmx: back to the project
    "corpora:document_delete": owned(200, 302),
    "corpora:document_page": owned(200, 405),  # not read yet: the page says so
    "corpora:question_set_detail": owned(200, 405),
    "corpora:question_set_delete": owned(405, 302),
    "corpora:question_generate": owned(405, 302),  # no index yet: refused, back to the project
    "corpora:question_set_accept": owned(405, 302),
    "corpora:question_edit": owned(405, 302),  # not a draft: refused, back to the set
    "corpora:question_delete": owned(405, 302),
    "runs:run_new": owned(200, 200),
    "runs:reward_preview": owned(405, 200),
    "runs:reward_preview_result": owned(200, 405),
    "runs:project_judge": owned(200, 200),
    "runs:run_detail": owned(200, 405),
    "runs:run_live": owned(200, 405),
    "runs:run_metrics": owned(200, 405),
    "runs:run_samples": owned(200, 405),
    "runs:run_cancel": owned(405, 302),
    "runs:run_delete": owned(200, 302),
    "runs:checkpoint_download": owned(302, 405),  # to a short-lived presigned address
    "serving:api_tokens": account(200, 200),
    "serving:api_token_revoke": owned(405, 302),
    # The run's playground (serving.playground): the page, asking (an empty question: the
    # form says what is missing), a question's state and its feedback (an id never asked or
    # expired: the fragment says so).
    "serving:playground": owned(200, 405),
    "serving:playground_ask": owned(405, 200),
    "serving:playground_result": owned(200, 405),
    "serving:playground_feedback": owned(405, 200),
    "v1:api-root": public(404, 404),
    "v1:openapi-json": public(200, 200),  # the API's schema, public like its documentation
    "v1:openapi-view": public(200, 200),
    # /v1 takes a personal API token, never the session: each principal sends its own token.
    # The owner's question reaches the inference queue, where no worker answers in this test.
    "v1:models_list": account(200, 405, token=True),
    "v1:models_retrieve": owned(200, 405, token=True),
    "v1:chat_completions": owned(405, 504, token=True, body=chat),
    # OpenAI's files and fine-tuning jobs (serving.jobs). A list and its create share one
    # URL, so their rules agree: the asker's own list, and an empty POST is a 400 for anyone
    # (test_api_jobs.py posts alice's file as bob: 404).
    "v1:files_list": account(200, 400, token=True),
    "v1:files_create": account(200, 400, token=True),
    "v1:files_retrieve": owned(200, 405, token=True),
    "v1:fine_tuning_jobs_list": account(200, 400, token=True),
    "v1:fine_tuning_jobs_create": account(200, 400, token=True),
    "v1:fine_tuning_jobs_retrieve": owned(200, 405, token=True),
    "v1:fine_tuning_jobs_cancel": owned(405, 200, token=True),  # a finished run stays so
    "v1:fine_tuning_jobs_events": owned(200, 405, token=True),
    "v1:fine_tuning_jobs_checkpoints": owned(200, 405, token=True),
    # Sleuth's own (serving.rest). /v1/projects lists and creates, as /v1/files does; a
    # project's URL retrieves (GET) and deletes (DELETE, which the matrix never sends).
    "v1:projects_list": account(200, 400, token=True),
    "v1:projects_create": account(200, 400, token=True),
    "v1:projects_retrieve": owned(200, 405, token=True),
    "v1:projects_delete": owned(200, 405, token=True),
    "v1:documents_list": owned(200, 405, token=True),
    "v1:documents_retrieve": owned(200, 405, token=True),
    "v1:question_sets_list": owned(200, 405, token=True),
    "v1:question_sets_retrieve": owned(200, 405, token=True),
    "v1:runs_metrics": owned(200, 405, token=True),
    "v1:runs_checkpoint_download": owned(200, 405, token=True),  # a presigned URL in JSON
}


def _skipped(namespace: str, name: str | None) -> bool:
    """The admin's own pages (see the module's docstring for why)."""
    return namespace == "admin" and name != "index"


def url_patterns() -> dict[str, list[str]]:
    """Every URL pattern of the URL conf by its `namespace:name` (its route where it has no
    name), with the names of the arguments its URL takes."""
    found: dict[str, list[str]] = {}

    def walk(patterns, namespace: str, route: str, arguments: list[str]) -> None:
        for entry in patterns:
            here = arguments + list(entry.pattern.regex.groupindex)
            if isinstance(entry, URLResolver):
                inner = ":".join(filter(None, [namespace, entry.namespace]))
                walk(entry.url_patterns, inner, route + str(entry.pattern), here)
            elif isinstance(entry, URLPattern) and not _skipped(namespace, entry.name):
                key = ":".join(filter(None, [namespace, entry.name])) if entry.name else None
                found[key or route + str(entry.pattern)] = here

    walk(get_resolver().url_patterns, "", "/", [])
    return found


PATTERNS = url_patterns()


@pytest.fixture
def things(alice) -> dict[str, object]:
    """One of each of alice's objects, by the name of the URL argument that takes it."""
    project = project_create(owner=alice, name="Alice's filings")
    document = Document.objects.create(
        project=project,
        name="a.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=3,
        sha256="0" * 64,
        s3_key=f"projects/{project.pk}/a.pdf",
        entity="ACME",
        status=Document.Status.PARSED,
    )
    question_set = QuestionSet.objects.create(
        project=project, name="qa.jsonl", s3_key=f"projects/{project.pk}/qa.jsonl", size=3
    )
    question = Question.objects.create(
        question_set=question_set, position=1, question="Q?", answer="A"
    )
    run = Run.objects.create(
        project=project,
        created_by=alice,
        name="First try",
        preset="quick-cpu",
        config=preset_config("quick-cpu").to_dict(),
        status=Run.Status.SUCCEEDED,
        question_set=question_set,
    )
    key = f"projects/{project.pk}/runs/{run.pk}/checkpoints/final.tar.gz"
    checkpoint = Checkpoint.objects.create(
        run=run,
        step=1,
        s3_prefix=key.removesuffix(".tar.gz"),
        is_final=True,
        archive_key=key,
        published_prefix=f"projects/{project.pk}/runs/{run.pk}/published/alices-agent",
        size_bytes=7,
    )
    token, _raw = api_token_create(user=alice, name="laptop")
    return {
        "project_id": project.pk,
        "document_id": document.pk,
        "question_set_id": question_set.pk,
        "question_id": question.pk,
        "run_id": run.pk,
        "checkpoint_id": checkpoint.pk,
        "token_id": token.pk,
        "model": "alices-agent",  # the published agent's name at /v1
        "file_id": f"file-{question_set.pk}",  # the question set, as /v1/files names it
        "fine_tuning_job_id": f"ftjob-{run.pk}",  # the run, as /v1/fine_tuning/jobs does
        "page": 1,  # of the document's text
        "preview_id": "0f3c9a1e",  # expired or never queued: the page says so
        "ask_id": "0f3c9a1e",  # a playground question expired or never asked
        "token": "no-such-token",
        "uidb64": "MQ",
    }


@pytest.fixture
def view_only_staff(django_user_model):
    """Staff who may look at everything in the admin and change nothing."""
    user = django_user_model.objects.create_user(
        email="viewer@sleuth.dev", password="pw-staff-1", is_staff=True
    )
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    return user


def client_for(principal: str, request) -> Client:
    """A client signed in as `principal`, sending a personal API token of theirs too."""
    fixture = {
        "owner": "alice",
        "customer": "bob",
        "staff": "view_only_staff",
        "superuser": "charlie",
    }.get(principal)
    if fixture is None:
        return Client(**REMOTE)
    user = request.getfixturevalue(fixture)
    _token, raw = api_token_create(user=user, name="matrix")
    client = Client(HTTP_AUTHORIZATION=f"Bearer {raw}", **REMOTE)
    client.force_login(user)
    return client


def alices_things() -> list:
    """What of alice's could be changed, as it stands."""
    return [
        list(Project.objects.values_list("pk", "name", "judge_base_url")),
        list(Document.objects.values_list("pk", "entity", "status")),
        list(QuestionSet.objects.values_list("pk", "name")),
        list(Question.objects.values_list("pk", "question")),
        list(Run.objects.values_list("pk", "status", "cancel_requested")),
        list(Checkpoint.objects.values_list("pk", "archive_key")),
        list(ApiToken.objects.filter(user__email="alice@example.com").values_list("revoked_at")),
        list(Project.objects.values_list("owner__email", "owner__is_active")),
    ]


def answer(response):
    """The response as the table writes it: a status, or where a 302 leads when it leads to a
    login page."""
    location = response.get("Location", "")
    for page in (LOGIN, ADMIN_LOGIN):
        if response.status_code == 302 and location.startswith(page.to):
            return page
    return response.status_code


def conforms(expected, got) -> bool:
    if isinstance(expected, frozenset):
        return got in expected
    return got == expected


def test_every_url_has_a_rule():
    unruled = sorted(set(PATTERNS) - set(RULES))

    assert not unruled, f"new URL without a rule in RULES: {unruled}"


def test_every_rule_names_a_url():
    stale = sorted(set(RULES) - set(PATTERNS))

    assert not stale, f"rules for URLs that no longer exist: {stale}"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("principal", PRINCIPALS)
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_each_url_answers_each_principal_by_its_rule(
    name, principal, method, things, request, settings
):
    assert name in RULES, f"new URL without a rule: {name}"
    rule = RULES[name]
    expected = rule.expected(principal, method)
    url = reverse(name, kwargs={argument: things[argument] for argument in PATTERNS[name]})
    client = client_for(principal, request)
    settings.SLEUTH_INFERENCE_TIMEOUT = 0.2
    before = alices_things()

    if method == "POST" and rule.body:
        response = client.post(url, rule.body(things), content_type="application/json")
    else:
        response = getattr(client, method.lower())(url)
    got = answer(response)

    assert conforms(expected, got), f"{method} {url} as {principal}: {got}, expected {expected}"
    if principal != "owner":
        assert alices_things() == before, f"{method} {url} as {principal} changed alice's things"


@pytest.mark.parametrize(
    "name", sorted(name for name, rule in RULES.items() if rule.post != 405 and not rule.token)
)
def test_no_post_is_taken_without_its_csrf_token(name, things, alice):
    """Every page that takes a POST needs the form's CSRF token: none is exempt. (The API
    needs none: it takes no cookie, only a token a browser never sends by itself.)"""
    client = Client(enforce_csrf_checks=True, **REMOTE)
    client.force_login(alice)
    url = reverse(name, kwargs={argument: things[argument] for argument in PATTERNS[name]})
    before = alices_things()

    response = client.post(url)

    assert response.status_code == 403, f"POST {url} without a CSRF token: {response.status_code}"
    assert alices_things() == before


@pytest.mark.parametrize("name", sorted(name for name, rule in RULES.items() if rule.token))
def test_the_api_takes_no_session_only_a_token(name, things, alice):
    """Signed in on the site but sending no token, alice gets 401 (or 405) from the API: a
    page elsewhere cannot make her browser call it with her cookie."""
    client = Client(**REMOTE)
    client.force_login(alice)
    url = reverse(name, kwargs={argument: things[argument] for argument in PATTERNS[name]})
    rule = RULES[name]

    got = client.get(url).status_code, client.post(url, rule.body and rule.body(things)).status_code

    assert got == (rule.expected("anonymous", "GET"), rule.expected("anonymous", "POST"))
