"""Run pages: start a run (with a reward preview), set the project's own judge, follow a
run live, read its trajectories, cancel it, download its checkpoints. Thin: every lookup by
id is scoped to the owner (404 for anyone else, staff included), writes go through
runs.services."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.ratelimit import account_limit_message, account_throttled, retry_words
from corpora.selectors import project_get_for_user

from .forms import ProjectJudgeForm, RewardPreviewForm, RunForm
from .judge_budget import JudgeBudgetSpent, judge_usage, seconds_to_reset
from .models import Run
from .presets import PRESETS, UnknownPreset, preset_config
from .retention import run_history_expired
from .routing import run_waiting_for
from .selectors import (
    checkpoint_download_url,
    checkpoint_get_for_user,
    run_get_for_user,
    run_metric_points,
    validation_rows,
)
from .services import (
    JudgeRejected,
    PreviewsInFlight,
    RunRejected,
    account_usage,
    preview_deadline,
    project_judge_clear,
    project_judge_set,
    reward_preview_get,
    reward_preview_queue,
    run_cancel,
    run_create,
    run_delete,
)

# The dashboard's charts: a title and the metrics keys it draws (a key ending in "*" takes
# every key with that prefix, e.g. each reward component or each pass@k; "!key" leaves one out).
CHARTS = [
    ("Reward", ["reward/*", "!reward/judge_failed"]),
    (
        "Accuracy and golden recall",
        ["accuracy", "golden_recall", "val/accuracy", "val/golden_recall"],
    ),
    ("pass@k (validation)", ["val/pass@*"]),
    ("Searches per question", ["searches_per_question", "echo_rate", "retrieved_chunks"]),
    ("KL and entropy", ["kl_ref", "mismatch_kl", "entropy"]),
    # Why RL trains on few groups: those whose rewards tied, and the curriculum's counts.
    ("RL's groups: tied, held back, retired", ["groups_dropped", "held_back", "retired"]),
    ("Rollout/trainer mismatch", ["mismatch_abs", "masked_share", "clip_share"]),
    ("Speed", ["step_s", "rollout_s", "train_s"]),
]
# Golden chunk ids and texts can be long; the viewer shows this many samples per step.
SAMPLES_PER_PAGE = 8
# The most points one metrics answer holds (a chart's width in pixels, about).
METRIC_POINTS = 500
# The live part lists the newest events, and counts the rest.
EVENTS_SHOWN = 50


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request, project_id: int):
    project = project_get_for_user(user=request.user, project_id=project_id)
    form = RunForm(request.POST or None, project=project)
    if request.method == "POST" and form.is_valid():
        try:
            run = run_create(
                project=project,
                user=request.user,
                name=form.cleaned_data["name"],
                question_set=form.cleaned_data["question_set"],
                preset=form.cleaned_data["preset"],
                options=form.options(),
            )
        except RunRejected as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Started {run.name}.")
            return redirect("runs:run_detail", run_id=run.pk)
    return render(
        request,
        "runs/run_new.html",
        {
            "project": project,
            "form": form,
            "preview_form": RewardPreviewForm(project=project),
            "presets": PRESETS,
            "usage": account_usage(request.user),
            "judge_usage": judge_usage(request.user) if settings.SLEUTH_JUDGES else None,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def reward_preview(request, project_id: int):
    """Check the sample answers and queue their scoring; the page then polls for it."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    form = RewardPreviewForm(request.POST, project=project)
    if form.is_valid():
        try:
            base = preset_config(request.POST.get("preset") or "quick-cpu").reward.to_dict()
            config = form.reward_config(base)
        except (UnknownPreset, ValueError) as error:
            form.add_error(None, str(error))
        else:
            window = account_throttled("preview", request.user)
            if window is not None:
                return _preview_throttled(request, project, form, window)
            data = form.cleaned_data
            try:
                preview_id = reward_preview_queue(
                    project=project,
                    user=request.user,
                    reward=config,
                    question=data["question_text"],
                    ground_truth=data["ground_truth"],
                    answers=data["answers"],
                    searched=data["searched"],
                    found_golden=data["found_golden"],
                )
            except JudgeBudgetSpent as error:
                return _preview_refused(request, project, form, str(error), seconds_to_reset())
            except PreviewsInFlight as full:
                return _preview_refused(request, project, form, str(full), full.retry_after)
            # Always pending here, however fast a worker is: the page polls for the result.
            return _preview_page(request, project, preview_id, preview={"status": "queued"})
    return render(request, "runs/_reward_preview.html", {"form": form, "project": project})


def _preview_throttled(request, project, form, window: int):
    """The account's previews are over their limit: say so where the scores would go (the
    run page's script swaps this 429 in), nothing queued."""
    message = f"{account_limit_message('preview')} {retry_words(window)}"
    return _preview_refused(request, project, form, message, window)


def _preview_refused(request, project, form, message: str, window: int):
    """A preview refused before it was queued (its rate limit, the judge budget, the
    account's previews in flight), told where the scores would go: a 429 with Retry-After,
    which the run page's script swaps in."""
    response = render(
        request,
        "runs/_reward_preview.html",
        {"form": form, "project": project, "throttled": message},
        status=429,
    )
    response["Retry-After"] = str(window)
    return response


@login_required
@require_GET
def reward_preview_result(request, project_id: int, preview_id: str):
    """The preview's state: pending (the fragment polls again), the scores, or why not."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    return _preview_page(request, project, preview_id)


def _preview_page(request, project, preview_id: str, preview: dict | None = None):
    if preview is None:
        preview = reward_preview_get(preview_id=preview_id, user=request.user, project=project)
    return render(
        request,
        "runs/_reward_preview.html",
        {
            "project": project,
            "preview_id": preview_id,
            "preview": preview,
            "deadline": preview_deadline(),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def project_judge(request, project_id: int):
    """The project's own judge endpoint: set it (the key is never shown back) or remove it."""
    project = project_get_for_user(user=request.user, project_id=project_id)
    form = ProjectJudgeForm(
        request.POST or None,
        initial={"base_url": project.judge_base_url, "model": project.judge_model},
    )
    if request.method == "POST" and "remove" in request.POST:
        project_judge_clear(project=project, user=request.user)
        messages.success(request, "Removed your judge endpoint and its key.")
        return redirect("runs:project_judge", project_id=project.pk)
    if request.method == "POST" and form.is_valid():
        try:
            project_judge_set(
                project=project,
                user=request.user,
                base_url=form.cleaned_data["base_url"],
                model=form.cleaned_data["model"],
                api_key=form.cleaned_data["api_key"],
            )
        except JudgeRejected as error:
            form.add_error("base_url", str(error))
        else:
            messages.success(request, "Saved your judge endpoint.")
            return redirect("runs:run_new", project_id=project.pk)
    return render(
        request,
        "runs/project_judge.html",
        {
            "project": project,
            "form": form,
            "judge_usage": judge_usage(request.user) if settings.SLEUTH_JUDGES else None,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_GET
def run_detail(request, run_id: int):
    run = run_get_for_user(user=request.user, run_id=run_id)
    return render(
        request,
        "runs/run_detail.html",
        _live_context(run)
        | {
            "charts": CHARTS,
            "history_expired": run_history_expired(run=run),
            "retention_days": settings.SLEUTH_RUN_RETENTION_DAYS,
        },
    )


@login_required
@require_GET
def run_live(request, run_id: int):
    """Status, progress, events, validation and checkpoints; polled by htmx while active."""
    run = run_get_for_user(user=request.user, run_id=run_id)
    return render(request, "runs/_run_live.html", _live_context(run))


def _live_context(run: Run) -> dict:
    events = list(run.events.order_by("-at", "-id")[:EVENTS_SHOWN])
    return {
        "run": run,
        "project": run.project,
        "events": events,
        "events_more": run.events.count() - EVENTS_SHOWN if len(events) == EVENTS_SHOWN else 0,
        "checkpoints": list(run.checkpoints.all()),
        "validation": validation_rows(run.eval_report),
        "progress": round(100 * run.current_step / run.total_steps) if run.total_steps else 0,
        "waiting_for": run_waiting_for(run),
    }


@login_required
@require_GET
def run_metrics(request, run_id: int):
    """The numeric series of the run's metrics, by key, aligned on `steps` (null where a
    step did not log that key, e.g. validation numbers between evaluations). `?since=<step>`
    sends only the steps after it, for the chart's polls to append; any answer holds at most
    METRIC_POINTS points (longer stretches averaged, the last step exact)."""
    run = run_get_for_user(user=request.user, run_id=run_id)
    since = request.GET.get("since")
    if since is not None and not since.isdigit():
        return JsonResponse({"error": "since must be a step number, e.g. ?since=120."}, status=400)
    # Read the status first: a run seen ended has written all its metrics by then.
    active = run.is_active
    points = run_metric_points(
        run=run, since=None if since is None else int(since), max_points=METRIC_POINTS
    )
    return JsonResponse(points | {"active": active})


@login_required
@require_GET
def run_samples(request, run_id: int):
    """The trajectory viewer for one step (the latest unless ?step= names another)."""
    run = run_get_for_user(user=request.user, run_id=run_id)
    steps = list(run.samples.values_list("step", flat=True).distinct().order_by("step"))
    try:
        step = int(request.GET.get("step", steps[-1] if steps else 0))
    except ValueError:
        step = steps[-1] if steps else 0
    samples = [
        _sample_view(sample.data) for sample in run.samples.filter(step=step)[:SAMPLES_PER_PAGE]
    ]
    return render(
        request,
        "runs/_samples.html",
        {
            "run": run,
            "steps": steps,
            "step": step,
            "latest": not steps or step == steps[-1],
            "samples": samples,
        },
    )


def _sample_view(data: dict) -> dict:
    """A trajectory with each retrieved chunk marked golden or not."""
    golden = set(data.get("golden_chunk_ids") or [])
    searches = [
        {
            "query": search.get("query", ""),
            "malformed": search.get("malformed", False),
            "chunks": [{"id": c, "golden": c in golden} for c in search.get("chunk_ids") or []],
        }
        for search in data.get("searches") or []
    ]
    found = {c["id"] for s in searches for c in s["chunks"]} & golden
    reward = data.get("reward") or {}
    return {
        "question": data.get("question", ""),
        "ground_truth": data.get("ground_truth", ""),
        "answer": data.get("answer"),
        "finish_reason": data.get("finish_reason", ""),
        "searches": searches,
        "golden": sorted(golden),
        "golden_missed": sorted(golden - found),
        "reward_total": reward.get("total"),
        "reward_parts": [(k, v) for k, v in reward.items() if k not in ("total", "judge_failed")],
        "judge_failed": bool(reward.get("judge_failed")),
        "text": data.get("text", ""),
    }


@login_required
@require_POST
def run_cancel_view(request, run_id: int):
    run = run_get_for_user(user=request.user, run_id=run_id)
    try:
        run_cancel(run=run, user=request.user)
    except RunRejected as error:
        messages.error(request, str(error))
    else:
        messages.success(request, f"Cancelling {run.name}: it stops after the current step.")
    return redirect("runs:run_detail", run_id=run.pk)


@login_required
@require_http_methods(["GET", "POST"])
def run_delete_view(request, run_id: int):
    """GET asks for confirmation; POST deletes the run with its checkpoints and downloads."""
    run = run_get_for_user(user=request.user, run_id=run_id)
    if request.method == "POST":
        try:
            run_delete(run=run, user=request.user)
        except RunRejected as error:
            messages.error(request, str(error))
            return redirect("runs:run_detail", run_id=run.pk)
        messages.success(request, f"Deleted the run {run.name}.")
        return redirect("corpora:project_detail", project_id=run.project_id)
    refused = ""
    if run.is_active:
        refused = f"{run.name} is still {run.status}. Cancel it, and delete it once it has stopped."
    return render(
        request,
        "confirm_delete.html",
        {
            "thing": "run",
            "name": run.name,
            "removes": [
                "its checkpoints, trained model and downloadable archive",
                "its metrics, events and sample trajectories",
            ],
            "refused": refused,
            "cancel_url": reverse("runs:run_detail", args=[run.pk]),
        },
    )


@login_required
@require_GET
def checkpoint_download(request, checkpoint_id: int):
    """Send the owner to a short-lived presigned URL for the checkpoint's archive."""
    checkpoint = checkpoint_get_for_user(user=request.user, checkpoint_id=checkpoint_id)
    if not checkpoint.archive_key:
        if checkpoint.is_final and checkpoint.run.is_active:
            messages.error(request, "This checkpoint is still being packed; try again shortly.")
        else:
            messages.error(request, "Only a run's final checkpoint is packed for download.")
        return redirect("runs:run_detail", run_id=checkpoint.run_id)
    url = checkpoint_download_url(checkpoint=checkpoint)
    if url is None:  # a key outside the run's own folder
        raise Http404("No such checkpoint archive.")
    return redirect(url)
