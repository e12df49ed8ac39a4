"""End to end on the real services: uploaded documents and questions go through a tiny run
on a real Celery worker to a published checkpoint that downloads, loads and answers."""

import io
import json
import subprocess
import sys
import tarfile
import time
import urllib.request
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from transformers import AutoModelForCausalLM

from corpora.models import Document
from corpora.services import (
    document_set_entity,
    document_upload,
    project_create,
    question_set_import,
)
from runs.models import Run
from runs.selectors import checkpoint_download_url, run_metric_series
from runs.services import run_create

sys.path.insert(0, str(Path(__file__).parents[1] / "engine"))
from test_training_rl import FACTS, FILLER, tiny_model_folder  # noqa: E402, F401 (re-exported)

TINY_OPTIONS = {
    "steps": 2,
    "questions_per_step": 2,
    "group_size": 2,
    "sft_epochs": 0,
    "lr": 1e-3,
    "save_every": 1,
    "eval_every": 0,
    "max_batch_tokens": 2048,
    "samples_logged": 1,
    "limits": {
        "max_turns": 2,
        "max_new_tokens": 24,
        "max_result_tokens": 120,
        "results_per_search": 1,
    },
}


def upload_corpus(project) -> None:
    for entity, (year, metric, value) in FACTS.items():
        text = f"{entity} {year} {metric} was {value} .\n\n{FILLER}\n"
        document = document_upload(
            project=project, file=SimpleUploadedFile(f"{entity}.txt", text.encode())
        )
        document_set_entity(document=document, entity=entity)
    deadline = time.monotonic() + 120
    while project.documents.filter(status=Document.Status.UPLOADED).exists():
        assert time.monotonic() < deadline, "documents were not parsed"
        time.sleep(0.25)


def upload_questions(project):
    lines = [
        json.dumps(
            {
                "question": f"what was {entity} {metric} in {year} ?",
                "answer": value,
                "entity": entity,
                "evidence": [{"text": f"{metric} was {value}", "doc": f"{entity}.txt"}],
            }
        )
        for entity, (year, metric, value) in FACTS.items()
    ]
    body = ("\n".join(lines) + "\n").encode()
    return question_set_import(project=project, file=SimpleUploadedFile("qa.jsonl", body))


def finished(run: Run, timeout: float = 600) -> Run:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if run.status in Run.FINISHED:
            return run
        time.sleep(0.5)
    raise AssertionError(f"run still {run.status} after {timeout}s")


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
