"""A consumer's dead-letter path, tested against Ferry in well under a second.

Start Ferry for it, then run this file with unittest or pytest (it needs boto3):

    ferry serve --memory --clock-control --fault-injection
    python3 -m unittest test_dead_letter.py

FERRY_ENDPOINT (default http://localhost:4566) is where Ferry listens,
FERRY_ADMIN_TOKEN its admin token if it has one. The test resets that
Ferry: point it at one kept for tests.
"""

import json
import os
import time
import unittest
import urllib.parse
import urllib.request

import boto3
from botocore.exceptions import ClientError

ENDPOINT = os.environ.get("FERRY_ENDPOINT", "http://localhost:4566")


def ferry(method, path, body=None):
    """Calls Ferry's admin API and returns its JSON answer."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(ENDPOINT + path, data=data, method=method)
    if os.environ.get("FERRY_ADMIN_TOKEN"):
        req.add_header("Authorization", "Bearer " + os.environ["FERRY_ADMIN_TOKEN"])
    with urllib.request.urlopen(req) as resp:
        return json.load(resp)


def advance(duration):
    """Moves Ferry's clock forward: timeouts run out without waiting."""
    ferry("POST", "/_ferry/clock/advance", {"duration": duration})


def poll(sqs, queue_url, handle):
    """One round of the consumer under test: receive a message, handle it,
    delete it once handled. A message whose handling fails is left alone:
    it comes back when its visibility timeout runs out."""
    try:
        got = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1)
    except ClientError as e:
        if e.response["Error"]["Code"] == "OverLimit":
            return "over-limit"  # too many messages in flight: try later
        raise
    if not got.get("Messages"):
        return "empty"
    msg = got["Messages"][0]
    try:
        handle(msg["Body"])
    except Exception:
        return "failed"
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg["ReceiptHandle"])
    return "handled"


def broken(body):
    raise ValueError("cannot handle " + body)


def eventually(check, what):
    """Waits for work Ferry does on its own (a move task) to be done."""
    deadline = time.monotonic() + 10
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("waited 10 s for " + what)
        time.sleep(0.01)


def redrive(sqs, dlq_url, dlq_arn):
    """Moves the dead-letter queue's messages back where they came from;
    returns the move task, or None where botocore has none."""
    if hasattr(sqs, "start_message_move_task"):
        sqs.start_message_move_task(SourceArn=dlq_arn)
        tasks = lambda: sqs.list_message_move_tasks(SourceArn=dlq_arn)["Results"]
        eventually(lambda: tasks()[0]["Status"] == "COMPLETED", "the move task")
        return tasks()[0]
    # botocore from before June 2023 has no move tasks: redrive by hand.
    got = sqs.receive_message(QueueUrl=dlq_url, MaxNumberOfMessages=10,
                              AttributeNames=["DeadLetterQueueSourceArn"])
    for m in got.get("Messages", []):
        source = m["Attributes"]["DeadLetterQueueSourceArn"].split(":")[-1]
        url = sqs.get_queue_url(QueueName=source)["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody=m["Body"])
        sqs.delete_message(QueueUrl=dlq_url, ReceiptHandle=m["ReceiptHandle"])
    return None


class DeadLetterTest(unittest.TestCase):
    def setUp(self):
        ferry("POST", "/_ferry/reset")
        ferry("POST", "/_ferry/clock/freeze")
        self.addCleanup(ferry, "POST", "/_ferry/clock/resume")
        self.addCleanup(ferry, "DELETE", "/_ferry/faults")
        self.sqs = boto3.client("sqs", endpoint_url=ENDPOINT, region_name="us-east-1",
                                aws_access_key_id="test", aws_secret_access_key="test")
        self.addCleanup(self.sqs.close)

    def arn(self, url):
        attrs = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return attrs["Attributes"]["QueueArn"]

    def visible(self, url):
        attrs = self.sqs.get_queue_attributes(QueueUrl=url,
                                              AttributeNames=["ApproximateNumberOfMessages"])
        return int(attrs["Attributes"]["ApproximateNumberOfMessages"])

    def test_poison_message_to_dead_letter_queue_and_back(self):
        sqs = self.sqs
        dlq = sqs.create_queue(QueueName="orders-dlq")["QueueUrl"]
        dlq_arn = self.arn(dlq)
        orders = sqs.create_queue(QueueName="orders", Attributes={
            "VisibilityTimeout": "30",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2}),
        })["QueueUrl"]
        sent = sqs.send_message(QueueUrl=orders, MessageBody='{"order": 42}')["MessageId"]

        # SQS refuses the next receive: the consumer copes and tries again.
        ferry("POST", "/_ferry/faults", {"queue": "orders", "action": "ReceiveMessage",
                                         "error": "OverLimit", "count": 1})
        self.assertEqual(poll(sqs, orders, broken), "over-limit")

        # The handler fails twice; each time the message comes back once its
        # 30 s visibility timeout has run out on Ferry's clock.
        for _ in range(2):
            self.assertEqual(poll(sqs, orders, broken), "failed")
            advance("30s")
        # The third receive finds it received maxReceiveCount times: SQS
        # moves it to the dead-letter queue instead of handing it out.
        self.assertEqual(poll(sqs, orders, broken), "empty")
        self.assertEqual(self.visible(dlq), 1)

        # Why it is there: its failure history.
        query = urllib.parse.urlencode({"queue": dlq, "message": sent})
        story = ferry("GET", "/_ferry/history?" + query)["events"]
        self.assertEqual([e["kind"] for e in story],
                         ["receive", "expiry", "receive", "expiry", "move"])
        self.assertEqual((story[-1]["from"], story[-1]["to"], story[-1]["cause"]),
                         (self.arn(orders), dlq_arn, "redrive"))

        # The bug is fixed: redrive, and the message is handled this time.
        task = redrive(sqs, dlq, dlq_arn)
        if task is not None:
            self.assertEqual(task["ApproximateNumberOfMessagesMoved"], 1)
        handled = []
        self.assertEqual(poll(sqs, orders, handled.append), "handled")
        self.assertEqual(handled, ['{"order": 42}'])
        self.assertEqual(self.visible(dlq) + self.visible(orders), 0)


if __name__ == "__main__":
    unittest.main()
