"""The engine (no Django): documents, search, agent, rewards, training, evaluation, publishing.

`config.tasks` is the exception: the Celery task module, the top floor that glues the
engine to the Django apps. Nothing else in this package may import Django.
"""
