"""WSGI entry point for gunicorn.

Refuses to serve a non-loopback address with development defaults (DEBUG on, the public
development SECRET_KEY): core.startup."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

application = get_wsgi_application()

from core.startup import check_web_server, serving_addresses  # noqa: E402 - needs settings

check_web_server(serving_addresses())
