"""Sign-up through a beta invite. Login, logout and password reset are Django's own views."""

from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from corpora.services import DeletionRefused
from waitlist.services import InviteError, invite_accept, invite_check

from .forms import AccountDeleteForm, SignupForm
from .services import account_delete


@never_cache
@require_http_methods(["GET", "POST"])
def signup(request, token: str):
    """GET only shows the form (link scanners in mail clients must not use up an invite);
    the invite is spent by the POST that creates the account."""
    try:
        invite = invite_check(token=token)
    except InviteError as error:
        return render(request, "accounts/invite_invalid.html", {"error": str(error)}, status=410)
    form = SignupForm(request.POST or None, email=invite.entry.email)
    if request.method == "POST" and form.is_valid():
        try:
            user = invite_accept(
                token=token, password=form.cleaned_data["password1"], name=form.cleaned_data["name"]
            )
        except InviteError as error:
            return render(
                request, "accounts/invite_invalid.html", {"error": str(error)}, status=410
            )
        login(request, user, backend="django.contrib.auth.backends.ModelBackend")
        return redirect("corpora:project_list")
    return render(request, "accounts/signup.html", {"form": form, "email": invite.entry.email})


@login_required
@require_http_methods(["GET", "POST"])
def account_delete_view(request):
    """Confirm with the password, then delete the account and everything in it."""
    form = AccountDeleteForm(request.POST or None, user=request.user)
    refused = ""
    if request.method == "POST" and form.is_valid():
        try:
            account_delete(user=request.user)
        except DeletionRefused as error:
            refused = str(error)
        else:
            logout(request)
            messages.success(request, "Your account and everything in it were deleted.")
            return redirect("home")
    projects = request.user.projects.count()
    return render(
        request,
        "confirm_delete.html",
        {
            "thing": "account",
            "name": request.user.email,
            "removes": [
                f"{projects} project(s), with their documents, question sets, runs and "
                "trained models",
                "your place on the waitlist",
            ],
            "refused": refused,
            "form": form,
            "cancel_url": reverse("corpora:project_list"),
        },
        status=400 if form.errors or refused else 200,
    )
