"""Health: /healthz (public liveness, touches nothing) and /healthz/details (each
dependency; staff, or a probe on this machine)."""

from django.http import HttpResponse, HttpResponseForbidden, JsonResponse
from django.views.decorators.cache import never_cache

from .health import cached_health_report
from .startup import is_loopback

# Headers a reverse proxy adds: a request carrying one came from elsewhere, whatever the
# proxy's own (loopback) address says.
_FORWARDED = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")


@never_cache
def healthz(request):
    """Liveness: the web process answers. No dependency is asked, nothing is disclosed."""
    return HttpResponse("ok", content_type="text/plain")


def _may_see_details(request) -> bool:
    if getattr(request, "user", None) is not None and request.user.is_staff:
        return True
    local = is_loopback(request.META.get("REMOTE_ADDR"))
    return local and not any(request.META.get(header) for header in _FORWARDED)


@never_cache
def healthz_details(request):
    """Each dependency's state, 200 only when every one is ok (cached a few seconds)."""
    if not _may_see_details(request):
        return HttpResponseForbidden("Forbidden", content_type="text/plain")
    report = cached_health_report()
    status = 200 if all(entry["ok"] for entry in report.values()) else 503
    return JsonResponse(report, status=status)
