"""The public landing page and its waitlist form."""

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from core.ratelimit import account_key, client_bucket, rate_limit_exceeded

from .forms import WaitlistForm
from .services import waitlist_join


@require_http_methods(["GET", "POST"])
def landing(request):
    form = WaitlistForm(request.POST or None)
    context = {"form": form}
    if request.method == "POST":
        limit, window = settings.WAITLIST_RATE_LIMIT
        if rate_limit_exceeded(
            key=f"waitlist:{client_bucket(request)}", limit=limit, window_seconds=window
        ):
            context["error"] = (
                "Too many sign-ups from your network just now. Try again in a few minutes."
            )
            return render(request, "home.html", context, status=429)
        email = request.POST.get("email", "")
        limit, window = settings.WAITLIST_EMAIL_RATE_LIMIT
        if email.strip() and rate_limit_exceeded(
            key=f"waitlist:email:{account_key(email)}", limit=limit, window_seconds=window
        ):
            context["error"] = "Too many sign-ups for this address just now. Try again later."
            return render(request, "home.html", context, status=429)
        if form.is_valid():
            entry, _created = waitlist_join(**form.cleaned_data)
            context["joined"] = {"email": entry.email}
            context["form"] = WaitlistForm()
    return render(request, "home.html", context)
