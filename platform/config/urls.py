from django.contrib import admin
from django.urls import include, path

from core import views as core_views
from serving.api import api as serving_api

urlpatterns = [
    path("", include("waitlist.urls")),
    path("", include("corpora.urls")),
    path("", include("runs.urls")),
    path("accounts/", include("accounts.urls")),
    path("", include("serving.urls")),
    path("v1/", serving_api.urls),
    path("healthz", core_views.healthz, name="healthz"),
    path("healthz/details", core_views.healthz_details, name="healthz_details"),
    path("admin/", admin.site.urls),
]
