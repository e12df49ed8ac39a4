"""A task goes through the real Redis broker to a real worker process and comes back."""

import socket

from config.celery import app


def test_task_round_trip_through_the_real_broker_and_worker(celery_worker):
    result = app.send_task("config.tasks.ping", args=["hello"])

    assert result.get(timeout=30) == {"payload": "hello", "worker": socket.gethostname()}


def test_tasks_without_a_queue_go_to_the_ingest_queue():
    assert app.conf.task_default_queue == "ingest"
    assert app.amqp.router.route({}, "config.tasks.ping")["queue"].name == "ingest"
