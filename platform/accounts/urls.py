from django.contrib.auth import views as auth_views
from django.urls import path, reverse_lazy

from . import views
from .forms import QueuedPasswordResetForm

app_name = "accounts"

urlpatterns = [
    path("signup/<str:token>/", views.signup, name="signup"),
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("delete/", views.account_delete_view, name="account_delete"),
    path(
        "password-reset/",
        auth_views.PasswordResetView.as_view(
            form_class=QueuedPasswordResetForm,
            success_url=reverse_lazy("accounts:password_reset_done"),
            email_template_name="registration/password_reset_email.txt",
            subject_template_name="registration/password_reset_subject.txt",
        ),
        name="password_reset",
    ),
    path(
        "password-reset/sent/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "password-reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(
            success_url=reverse_lazy("accounts:password_reset_complete")
        ),
        name="password_reset_confirm",
    ),
    path(
        "password-reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]
