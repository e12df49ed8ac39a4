"""The API tokens page of an account: create a token (shown once), see and revoke tokens;
and a succeeded run's playground (serving.playground): ask, poll, give feedback."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.ratelimit import rate_limit_exceeded, too_many_requests

from . import playground as play
from .forms import ApiTokenForm, PlaygroundFeedbackForm, PlaygroundForm
from .selectors import api_tokens_for_user
from .services import api_token_create, api_token_revoke


@never_cache  # the page that shows a new token must not be kept by any cache
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request):
    form = ApiTokenForm(request.POST or None, user=request.user)
    new_token = None
    if request.method == "POST":
        limit, window = settings.SLEUTH_TOKEN_MINT_RATE_LIMIT
        if rate_limit_exceeded(
            key=f"token-mint:user:{request.user.pk}", limit=limit, window_seconds=window
        ):
            return too_many_requests(request, window, "Too many tokens asked for. Wait a while.")
        if form.is_valid():
            token, raw = api_token_create(
                user=request.user,
                name=form.cleaned_data["name"],
                scopes=form.cleaned_data["scopes"],
                expires_in_days=form.cleaned_data["expires_in_days"],
            )
            new_token = {"token": token, "raw": raw}
            form = ApiTokenForm(user=request.user)
    return render(
        request,
        "serving/api_tokens.html",
        {
            "form": form,
            "new_token": new_token,
            "tokens": api_tokens_for_user(user=request.user),
            "base_url": request.build_absolute_uri("/v1"),
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def api_token_revoke_view(request, token_id: int):
    token = api_token_revoke(user=request.user, token_id=token_id)
    messages.success(request, f"Revoked {token.name} ({token.prefix}…): it no longer works.")
    return redirect("serving:api_tokens")


@login_required
@require_GET
def playground(request, run_id: int):
    """Ask the run's published agent a question, side by side with a comparison agent."""
    ground = play.playground_for(user=request.user, run_id=run_id)
    return render(
        request,
        "serving/playground.html",
        {
            "run": ground.run,
            "project": ground.run.project,
            "agent": ground.agent,
            "agent_base": ground.base_label,
            "form": PlaygroundForm(others=ground.others, base_label=ground.base_label),
            "question_max": play.QUESTION_MAX_CHARS,
            "feedback_set": play.FEEDBACK_SET,
        },
    )


def _result(request, ground, ask_id: str, entry=None, error: str = "", status: int = 200):
    if entry is None and not error:
        entry = play.playground_result(user=request.user, playground=ground, ask_id=ask_id)
    return render(
        request,
        "serving/_playground_result.html",
        {"run": ground.run, "ask_id": ask_id, "entry": entry, "error": error},
        status=status,
    )


@login_required
@require_POST
def playground_ask_view(request, run_id: int):
    """Queue the question; the answer is a fragment that polls for the result."""
    ground = play.playground_for(user=request.user, run_id=run_id)
    form = PlaygroundForm(request.POST, others=ground.others, base_label=ground.base_label)
    if not form.is_valid():
        errors = "; ".join(e for field in form.errors.values() for e in field)
        return _result(request, ground, "", error=errors)
    try:
        ask_id = play.playground_ask(
            user=request.user,
            playground=ground,
            question=form.cleaned_data["question"],
            compare=form.cleaned_data["compare"],
        )
    except play.PlaygroundRefused as refused:
        return _result(request, ground, "", error=refused.message, status=refused.status)
    return _result(request, ground, ask_id)


@login_required
@require_GET
def playground_result_view(request, run_id: int, ask_id: str):
    """The question as it stands: polled every second by the page until every column is done."""
    ground = play.playground_for(user=request.user, run_id=run_id)
    return _result(request, ground, ask_id)


@login_required
@require_POST
def playground_feedback_view(request, run_id: int, ask_id: str):
    """A thumbs-up, or a thumbs-down with the correct answer: adds the question to the
    project's "From the playground" question set."""
    ground = play.playground_for(user=request.user, run_id=run_id)
    form = PlaygroundFeedbackForm(request.POST)
    context = {"run": ground.run, "ask_id": ask_id, "feedback_set": play.FEEDBACK_SET}
    if not form.is_valid():
        context["error"] = "Say whether the answer was right (and if not, the correct one)."
    else:
        try:
            context["added"] = play.playground_feedback(
                user=request.user,
                playground=ground,
                ask_id=ask_id,
                column=form.cleaned_data["column"],
                helpful=form.cleaned_data["helpful"] == "up",
                correction=form.cleaned_data["correction"],
            )
        except play.PlaygroundRefused as refused:
            context["error"] = refused.message
    return render(request, "serving/_playground_feedback.html", context)
