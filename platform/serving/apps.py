from django.apps import AppConfig


class ServingConfig(AppConfig):
    name = "serving"

    def ready(self) -> None:
        from django.conf import settings

        from core.request_limits import upload_view

        from .services import api_token_authenticate

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
