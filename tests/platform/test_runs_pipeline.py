"""End to end on the real services: uploaded documents and questions go through a tiny run
on a real Celery worker to a published checkpoint that downloads, loads and answers."""

import io
import json
import subprocess
import sys
import tarfile
import urllib.request

import pytest
from transformers import AutoModelForCausalLM

from corpora.services import (
    project_create,
)
from runs.selectors import checkpoint_download_url, run_metric_series
from runs.services import run_create
from tests.helpers.runs import TINY_OPTIONS, finished, upload_corpus, upload_questions


@pytest.mark.django_db(transaction=True)
def test_uploaded_documents_and_questions_become_a_published_model_that_answers(
    celery_worker, tiny_model, alice, tmp_path, settings
):
    model = tiny_model  # on the suite worker's allowlist (it checks it again)
    settings.SLEUTH_ALLOWED_MODELS = ["default", model]  # the operator's allowlist, plus it
    project = project_create(owner=alice, name="Toy filings")
    upload_corpus(project)
    question_set = upload_questions(project)

    run = run_create(
        project=project,
        user=alice,
        name="tiny",
        question_set=question_set,
        preset="quick-cpu",
        options={**TINY_OPTIONS, "model": model},
    )
    run = finished(run)

    assert (run.status, run.status_reason) == ("succeeded", "Published.")
    statuses = [e.status for e in run.events.all() if e.status]
    assert statuses == ["queued", "preparing", "training", "evaluating", "publishing", "succeeded"]
    assert set(project.documents.values_list("status", flat=True)) == {"indexed"}
    assert run_metric_series(run=run, keys=["reward/total"])["step"] == [1, 2]
    assert run.samples.filter(step=2).exists()
    policies = set(run.eval_report["policies"])
    assert {"trained", "base"} <= policies and any(p.startswith("echo") for p in policies)
    final = run.checkpoints.get(is_final=True)
    assert final.step == 2 and final.archive_key

    with urllib.request.urlopen(checkpoint_download_url(checkpoint=final)) as response:
        archive = response.read()
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp_path / "download", filter="data")
    (folder,) = (tmp_path / "download").iterdir()
    model = AutoModelForCausalLM.from_pretrained(folder)
    assert model.config.num_hidden_layers == 2
    card = (folder / "README.md").read_text()
    assert "| trained |" in card and "| echo" in card

    answered = subprocess.run(
        [sys.executable, str(folder / "agent" / "run_agent.py"), "what was acme revenue ?"]
        + ["--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert answered.returncode in (0, 1), answered.stderr[-2000:]
    result = json.loads(answered.stdout)
    assert result["transcript"]


@pytest.mark.django_db(transaction=True)
def test_a_run_with_a_cold_start_reports_rls_share_of_it_on_its_page(
    celery_worker, tiny_model, alice, settings, client
):
    settings.SLEUTH_ALLOWED_MODELS = ["default", tiny_model]
    project = project_create(owner=alice, name="Toy filings")
    upload_corpus(project)
    run = run_create(
        project=project,
        user=alice,
        name="with a cold start",
        question_set=upload_questions(project),
        preset="quick-cpu",
        options={**TINY_OPTIONS, "sft_epochs": 1, "model": tiny_model},
    )
    run = finished(run)

    # The cold start went to S3 beside the final model and was evaluated beside it.
    assert run.status == "succeeded"
    report = run.eval_report
    assert report["policies"]["cold-start"]["n"] == report["policies"]["trained"]["n"]
    assert set(report["rl_share"]) == {"recall", "accuracy"}
    client.force_login(alice)
    html = client.get(f"/runs/{run.pk}/").content.decode()
    assert "The same run before RL (its cold start alone)" in html
    assert "RL&#x27;s share of this run" in html or "RL's share of this run" in html
