from django.urls import path

from . import review_views, views

app_name = "corpora"

urlpatterns = [
    path("projects/", views.project_list, name="project_list"),
    path("projects/<int:project_id>/", views.project_detail, name="project_detail"),
    path("projects/<int:project_id>/delete/", views.project_delete_view, name="project_delete"),
    path("projects/<int:project_id>/search/", views.project_search, name="project_search"),
    path("projects/<int:project_id>/documents/", views.document_table, name="document_table"),
    path(
        "projects/<int:project_id>/documents/upload/",
        views.document_upload_view,
        name="document_upload",
    ),
    path(
        "projects/<int:project_id>/question-sets/upload/",
        views.question_set_upload,
        name="question_set_upload",
    ),
    path("documents/<int:document_id>/entity/", views.document_entity, name="document_entity"),
    path("documents/<int:document_id>/delete/", views.document_delete_view, name="document_delete"),
    path(
        "documents/<int:document_id>/pages/<int:page>/",
        views.document_page,
        name="document_page",
    ),
    path(
        "question-sets/<int:question_set_id>/",
        views.question_set_detail,
        name="question_set_detail",
    ),
    path(
        "projects/<int:project_id>/question-sets/generate/",
        review_views.question_generate,
        name="question_generate",
    ),
    path(
        "question-sets/<int:question_set_id>/accept/",
        review_views.question_set_accept_view,
        name="question_set_accept",
    ),
    path(
        "questions/<int:question_id>/edit/", review_views.question_edit_view, name="question_edit"
    ),
    path(
        "questions/<int:question_id>/delete/",
        review_views.question_delete_view,
        name="question_delete",
    ),
    path(
        "question-sets/<int:question_set_id>/delete/",
        views.question_set_delete_view,
        name="question_set_delete",
    ),
]
