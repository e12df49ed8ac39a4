from django.urls import path

from . import views

app_name = "serving"

urlpatterns = [
    path("account/api-tokens/", views.api_tokens, name="api_tokens"),
    path(
        "account/api-tokens/<int:token_id>/revoke/",
        views.api_token_revoke_view,
        name="api_token_revoke",
    ),
]
