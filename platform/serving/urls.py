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

urlpatterns += [
    path("runs/<int:run_id>/playground/", views.playground, name="playground"),
    path("runs/<int:run_id>/playground/ask/", views.playground_ask_view, name="playground_ask"),
    path(
        "runs/<int:run_id>/playground/<str:ask_id>/",
        views.playground_result_view,
        name="playground_result",
    ),
    path(
        "runs/<int:run_id>/playground/<str:ask_id>/feedback/",
        views.playground_feedback_view,
        name="playground_feedback",
    ),
]
