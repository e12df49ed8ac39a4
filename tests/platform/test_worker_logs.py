"""A worker's log keeps no customer content: a chat's answer and snippets stay out of it."""

import logging

from celery.app.trace import LOG_SUCCESS, info

import config.celery  # noqa: F401  (installs the filter, as every worker does)


def succeeded(name: str, result: dict) -> None:
    info(LOG_SUCCESS, {"id": "t-1", "name": name, "return_value": repr(result), "runtime": 0.2})


def test_a_chat_s_answer_and_snippets_are_not_in_the_worker_log(caplog):
    answer = {"answer": "Revenue was $4.2 billion", "searches": [{"snippet": "ACME 10-K p.7"}]}
    with caplog.at_level(logging.INFO, logger="celery.app.trace"):
        succeeded("config.tasks.agent_chat", answer)

    assert "config.tasks.agent_chat[t-1] succeeded in 0.2s" in caplog.text
    assert "4.2 billion" not in caplog.text and "ACME" not in caplog.text
    assert "not logged" in caplog.text


def test_other_tasks_results_are_logged_as_celery_logs_them(caplog):
    with caplog.at_level(logging.INFO, logger="celery.app.trace"):
        succeeded("config.tasks.question_set_generate", {"id": 42})

    assert "{'id': 42}" in caplog.text
