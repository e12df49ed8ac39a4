"""The API tokens page of an account: create a token (shown once), see and revoke tokens."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from .forms import ApiTokenForm
from .selectors import api_tokens_for_user
from .services import api_token_create, api_token_revoke


@never_cache  # the page that shows a new token must not be kept by any cache
@login_required
@require_http_methods(["GET", "POST"])
def api_tokens(request):
    form = ApiTokenForm(request.POST or None)
    new_token = None
    if request.method == "POST" and form.is_valid():
        token, raw = api_token_create(user=request.user, name=form.cleaned_data["name"])
        new_token = {"token": token, "raw": raw}
        form = ApiTokenForm()
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
