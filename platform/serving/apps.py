from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "serving"

    def ready(self) -> None:
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db.models.signals import pre_save

        from core.request_limits import upload_view

        from .services import api_token_authenticate, api_tokens_revoke_all

        def revoke_tokens_on_new_password(sender, instance, **_) -> None:
            # `set_password` (a change, a reset, the admin) leaves the new password pending
            # until the save; whoever held the old one may have minted tokens with it.
            if instance.pk is not None and getattr(instance, "_password", None) is not None:
                api_tokens_revoke_all(user=instance)

        pre_save.connect(  # weak=False: the handler is local to ready(), nothing else holds it
            revoke_tokens_on_new_password,
            weak=False,
            sender=get_user_model(),
            dispatch_uid="serving.revoke_tokens_on_new_password",
        )

        def bearer_token_valid(request) -> bool:
            kind, _, raw = request.headers.get("Authorization", "").partition(" ")
            return kind.lower() == "bearer" and api_token_authenticate(raw=raw.strip()) is not None

        # /v1/files takes what the website takes: a document or a question file, from a client
        # with a valid token (the same check the API runs next, so nothing is trusted early).
        upload_view(
            "v1:files_create",
            max_bytes=lambda: max(settings.DOCUMENT_MAX_BYTES, settings.QUESTION_FILE_MAX_BYTES),
            authenticated=bearer_token_valid,
        )
