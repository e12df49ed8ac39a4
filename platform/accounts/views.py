"""Sign-up through a beta invite. Login, logout and password reset are Django's own views."""

from django.contrib.auth import login
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from waitlist.services import InviteError, invite_accept, invite_check

from .forms import SignupForm


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
