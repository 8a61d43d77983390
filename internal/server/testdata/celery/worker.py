"""A Celery application on Ferry through kombu's SQS transport: it sends
two tasks, then runs a worker (solo pool) that processes them. The task
fails for the input "poison". Each run of the task appends its input to
the file MARKER before it may fail, so the Go test that runs this worker
sees every attempt.

MODE "defaults" keeps Celery's acknowledgement settings: a task's message
is acknowledged (deleted) when the worker takes it, so a failed task never
reaches the queue's dead-letter queue. MODE "dead-letter" sets what a
dead-letter queue needs: task_acks_late (acknowledge after the task ran)
and task_acks_on_failure_or_timeout=False (a failed task's message is not
acknowledged), so the message comes back after the queue's visibility
timeout and moves on after maxReceiveCount receives.

Usage: python3 worker.py MODE QUEUE_URL MARKER ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY
"""

import sys
from urllib.parse import quote, urlsplit

from celery import Celery


def main(mode, queue_url, marker, endpoint, region, key_id, secret):
    if mode not in ("defaults", "dead-letter"):
        sys.exit("MODE is defaults or dead-letter, not " + mode)
    where = urlsplit(endpoint)
    app = Celery("ferry")
    app.conf.update(
        # kombu's SQS transport reaches Ferry at the broker URL's host and
        # port, over HTTP when is_secure is false.
        broker_url="sqs://%s:%s@%s" % (quote(key_id, safe=""), quote(secret, safe=""), where.netloc),
        broker_transport_options={
            "region": region,
            "is_secure": where.scheme == "https",
            # The queue exists, with its RedrivePolicy: kombu neither
            # lists nor creates queues.
            "predefined_queues": {
                "tasks": {"url": queue_url, "access_key_id": key_id, "secret_access_key": secret},
            },
            "wait_time_seconds": 20,
        },
        task_default_queue="tasks",
        task_serializer="json",
        accept_content=["json"],
        worker_hijack_root_logger=False,
    )
    if mode == "dead-letter":
        app.conf.update(task_acks_late=True, task_acks_on_failure_or_timeout=False)

    @app.task(name="ferry.process")
    def process(item):
        with open(marker, "a") as f:
            f.write(item + "\n")
        if item == "poison":
            raise ValueError("cannot process " + item)

    for item in ("good", "poison"):
        process.delay(item)
    app.worker_main(["worker", "--pool=solo", "--concurrency=1", "--without-gossip", "--without-mingle",
                     "--without-heartbeat", "--loglevel=INFO", "--queues=tasks"])


if __name__ == "__main__":
    if len(sys.argv) != 8:
        sys.exit("usage: python3 worker.py MODE QUEUE_URL MARKER ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY")
    main(*sys.argv[1:])
