"""A Content-Security-Policy on every page: scripts only from this site's own static files.

Every script the pages use is a static file (htmx, Chart.js, the upload and chart scripts; the
API's Swagger UI from Django Ninja's static files), so `script-src 'self'` costs nothing and
stops an injected `<script>` or event handler from running. Styles allow inline attributes
(htmx adds its indicator style). A response that sets its own policy keeps it.
"""

from django.conf import settings


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        policy = settings.CONTENT_SECURITY_POLICY
        if policy and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy
        return response
