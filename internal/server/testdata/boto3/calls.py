"""Drives a Ferry that verifies signatures with boto3: a series of SQS, SNS
and CloudWatch calls signed by botocore, then calls signed with a wrong
secret and with an unknown key. It prints what came back as one JSON
document on stdout, the same shape as ../jssdk/calls.mjs prints; the Go
test judges it.

Usage: python3 calls.py ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY
"""

import base64
import json
import sys
import time
from datetime import datetime, timedelta, timezone

import boto3
import botocore
from botocore.config import Config
from botocore.exceptions import ClientError


def wire_protocol(headers):
    kind = headers.get("Content-Type", b"")
    if isinstance(kind, bytes):
        kind = kind.decode()
    kind = kind.split(";")[0]
    if headers.get("Smithy-Protocol") in (b"rpc-v2-cbor", "rpc-v2-cbor"):
        return "rpcv2-cbor"
    if kind == "application/x-amz-json-1.0":
        return "json"
    if kind == "application/x-www-form-urlencoded":
        return "query"
    return "other: " + kind


def main(endpoint, region, key_id, secret):
    # The wire protocol of each request, by service.
    protocols = {}

    def clients(key, secret_key):
        # One attempt: an answer is judged as Ferry gave it, not retried.
        config = Config(retries={"total_max_attempts": 1})
        made = {}
        for name, service in (("sqs", "sqs"), ("sns", "sns"), ("cloudwatch", "cloudwatch")):
            client = boto3.session.Session().client(
                service, endpoint_url=endpoint, region_name=region, config=config,
                aws_access_key_id=key, aws_secret_access_key=secret_key)

            def record(request, name=name, **_):
                protocols.setdefault(name, set()).add(wire_protocol(request.headers))

            client.meta.events.register("before-send", record)
            made[name] = client
        return made

    def failure(call):
        try:
            call()
        except ClientError as err:
            return {"code": err.response["Error"].get("Code", ""),
                    "status": err.response["ResponseMetadata"].get("HTTPStatusCode", 0),
                    "message": err.response["Error"].get("Message", "")}
        return {"code": "", "status": 200, "message": "the call succeeded"}

    c = clients(key_id, secret)
    out = {"sdk": "boto3/%s botocore/%s" % (boto3.__version__, botocore.__version__)}

    # SQS.
    sqs = c["sqs"]
    queue_url = sqs.create_queue(QueueName="signed", Attributes={"VisibilityTimeout": "45"})["QueueUrl"]
    sent = sqs.send_message(
        QueueUrl=queue_url, MessageBody="signed by the SDK: ünïcode & symbols +=/",
        MessageAttributes={
            "kind": {"DataType": "String", "StringValue": "test"},
            "count": {"DataType": "Number", "StringValue": "7"},
            "raw": {"DataType": "Binary", "BinaryValue": bytes([0, 1, 2, 255])},
        })
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=1,
                                   MessageAttributeNames=["All"], AttributeNames=["All"])
    msg = (received.get("Messages") or [{}])[0]
    sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=msg.get("ReceiptHandle", ""))
    batch = sqs.send_message_batch(QueueUrl=queue_url, Entries=[
        {"Id": "first", "MessageBody": "one"},
        {"Id": "second", "MessageBody": "two", "DelaySeconds": 0,
         "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "batch"}}},
    ])
    attrs = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["All"])
    mattrs = msg.get("MessageAttributes", {})
    raw = mattrs.get("raw", {}).get("BinaryValue")
    out["sqs"] = {
        "queueUrl": queue_url,
        "sentMessageId": sent["MessageId"],
        "sentMD5OfMessageBody": sent["MD5OfMessageBody"],
        "received": {
            "messageId": msg.get("MessageId"),
            "body": msg.get("Body"),
            "senderId": msg.get("Attributes", {}).get("SenderId"),
            "receiveCount": msg.get("Attributes", {}).get("ApproximateReceiveCount"),
            "kind": mattrs.get("kind", {}).get("StringValue"),
            "count": mattrs.get("count", {}).get("StringValue"),
            "raw": base64.b64encode(raw).decode() if raw is not None else None,
        },
        "batchSuccessful": sorted(e["Id"] for e in batch.get("Successful", [])),
        "batchFailed": [e["Id"] for e in batch.get("Failed", [])],
        "attributes": attrs["Attributes"],
    }

    # SNS, delivering into a second queue of the same account.
    sns = c["sns"]
    inbox_url = sqs.create_queue(QueueName="signed-inbox")["QueueUrl"]
    inbox_arn = sqs.get_queue_attributes(QueueUrl=inbox_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic_arn = sns.create_topic(Name="signed-events")["TopicArn"]
    sub = sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=inbox_arn, ReturnSubscriptionArn=True)
    published = sns.publish(TopicArn=topic_arn, Subject="signed", Message="published by the SDK",
                            MessageAttributes={"kind": {"DataType": "String", "StringValue": "event"}})
    topics = sns.list_topics()
    # Publish returns once the copy is in the queue.
    delivered = sqs.receive_message(QueueUrl=inbox_url, MaxNumberOfMessages=1).get("Messages") or [{}]
    out["sns"] = {
        "topicArn": topic_arn,
        "subscriptionArn": sub["SubscriptionArn"],
        "publishedMessageId": published["MessageId"],
        "topics": [t["TopicArn"] for t in topics.get("Topics", [])],
        "delivered": delivered[0].get("Body"),
    }

    # CloudWatch: Ferry's own SQS metrics of the queue above.
    cw = c["cloudwatch"]
    now = datetime.now(timezone.utc)
    metrics = cw.list_metrics(Namespace="AWS/SQS", Dimensions=[{"Name": "QueueName", "Value": "signed"}])
    stats = cw.get_metric_statistics(
        Namespace="AWS/SQS", MetricName="NumberOfMessagesSent", Dimensions=[{"Name": "QueueName", "Value": "signed"}],
        StartTime=now - timedelta(hours=1), EndTime=now + timedelta(hours=1), Period=3600, Statistics=["Sum"])
    out["cloudwatch"] = {
        "metrics": sorted({m["MetricName"] for m in metrics.get("Metrics", [])}),
        "label": stats.get("Label"),
        "sum": sum(d["Sum"] for d in stats.get("Datapoints", [])),
    }

    # Signatures Ferry must refuse, on every service.
    out["refused"] = {}
    for name, cs in (("wrongSecret", clients(key_id, secret + "-wrong")),
                     ("unknownKey", clients("AKIAUNKNOWN000000000", secret))):
        out["refused"][name] = {
            "sqs": failure(lambda: cs["sqs"].list_queues()),
            "sns": failure(lambda: cs["sns"].list_topics()),
            "cloudwatch": failure(lambda: cs["cloudwatch"].list_metrics()),
        }

    out["protocols"] = {k: sorted(v) for k, v in protocols.items()}
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: python3 calls.py ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY")
    main(*sys.argv[1:])
