from django.http import JsonResponse
from django.views.decorators.cache import never_cache

from .health import health_report


@never_cache
def healthz(request):
    report = health_report()
    status = 200 if all(entry["ok"] for entry in report.values()) else 503
    return JsonResponse(report, status=status)
