from django.apps import AppConfig


class CorporaConfig(AppConfig):
    name = "corpora"
