from django.urls import path

from . import views

app_name = "runs"

urlpatterns = [
    path("projects/<int:project_id>/runs/new/", views.run_new, name="run_new"),
    path(
        "projects/<int:project_id>/runs/reward-preview/",
        views.reward_preview,
        name="reward_preview",
    ),
    path(
        "projects/<int:project_id>/runs/reward-preview/<str:preview_id>/",
        views.reward_preview_result,
        name="reward_preview_result",
    ),
    path("projects/<int:project_id>/judge/", views.project_judge, name="project_judge"),
    path("runs/<int:run_id>/", views.run_detail, name="run_detail"),
    path("runs/<int:run_id>/live/", views.run_live, name="run_live"),
    path("runs/<int:run_id>/metrics.json", views.run_metrics, name="run_metrics"),
    path("runs/<int:run_id>/samples/", views.run_samples, name="run_samples"),
    path("runs/<int:run_id>/cancel/", views.run_cancel_view, name="run_cancel"),
    path("runs/<int:run_id>/delete/", views.run_delete_view, name="run_delete"),
    path(
        "checkpoints/<int:checkpoint_id>/download/",
        views.checkpoint_download,
        name="checkpoint_download",
    ),
]
