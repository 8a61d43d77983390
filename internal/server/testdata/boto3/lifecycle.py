"""Drives the dead-letter lifecycle through Ferry with boto3, as a Python
application does without a consumer framework: a receive loop whose handler
fails on poison messages, SNS raw delivery with filter policies and a
subscription dead-letter queue, a CloudWatch alarm on the dead-letter queue,
and the redrive. It goes in the steps of ../jssdk/lifecycle.mjs and prints
the same events: one JSON line {"event": NAME, ...} on stdout per step,
reading one JSON line on stdin where the Go test that owns Ferry's clock
must act first; the last event, "report", is what the test judges.

Debian's boto3 (botocore 1.29) predates StartMessageMoveTask, so the
redrive is the one older SDKs do by hand: receive from the dead-letter
queue, send to the queue named by DeadLetterQueueSourceArn, delete.

Usage: python3 lifecycle.py ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY
"""

import json
import sys
from datetime import datetime, timedelta, timezone

import boto3
from botocore.config import Config


def step(event, wait=False, **fields):
    """Prints an event; with wait returns the test's answer."""
    sys.stdout.write(json.dumps(dict(event=event, **fields)) + "\n")
    sys.stdout.flush()
    if not wait:
        return None
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("stdin closed at " + event)
    return json.loads(line)


def main(endpoint, region, key_id, secret):
    session = boto3.session.Session(aws_access_key_id=key_id, aws_secret_access_key=secret, region_name=region)
    # One attempt: an answer is judged as Ferry gave it, not retried.
    config = Config(retries={"total_max_attempts": 1})
    sqs = session.client("sqs", endpoint_url=endpoint, config=config)
    sns = session.client("sns", endpoint_url=endpoint, config=config)
    cw = session.client("cloudwatch", endpoint_url=endpoint, config=config)

    def create_queue(name, attributes=None):
        url = sqs.create_queue(QueueName=name, Attributes=attributes or {})["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        return url, arn

    def take(url):
        """Receives and deletes what the queue hands out."""
        msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, MessageAttributeNames=["All"],
                                   AttributeNames=["All"]).get("Messages", [])
        for m in msgs:
            sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        return msgs

    def bodies(msgs):
        return sorted(m["Body"] for m in msgs)

    report = {}

    # A standard and a FIFO source, each with a dead-letter queue.
    dlq_url, dlq_arn = create_queue("orders-dlq")
    src_url, src_arn = create_queue("orders", {
        "VisibilityTimeout": "30",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 2})})
    sqs.set_queue_attributes(QueueUrl=dlq_url, Attributes={
        "RedriveAllowPolicy": json.dumps({"redrivePermission": "byQueue", "sourceQueueArns": [src_arn]})})
    fifo_dlq_url, fifo_dlq_arn = create_queue("orders-dlq.fifo", {"FifoQueue": "true"})
    fifo_url, _ = create_queue("orders.fifo", {
        "FifoQueue": "true", "VisibilityTimeout": "30",
        "RedrivePolicy": json.dumps({"deadLetterTargetArn": fifo_dlq_arn, "maxReceiveCount": 2})})
    report["queues"] = {"dlq": dlq_url, "src": src_url, "fifoDlq": fifo_dlq_url, "fifo": fifo_url}

    sent = sqs.send_message_batch(QueueUrl=src_url, Entries=[
        {"Id": "g1", "MessageBody": "good-1"},
        {"Id": "p1", "MessageBody": "poison-1",
         "MessageAttributes": {"kind": {"DataType": "String", "StringValue": "order"}}},
        {"Id": "g2", "MessageBody": "good-2"},
    ])
    fifo_sent = sqs.send_message_batch(QueueUrl=fifo_url, Entries=[
        {"Id": "f%d" % i, "MessageBody": body, "MessageGroupId": "customer-7", "MessageDeduplicationId": "d%d" % i}
        for i, body in enumerate(["f-good-1", "f-poison", "f-good-2"])])
    report["sent"] = sorted(e["Id"] for e in sent.get("Successful", []) + fifo_sent.get("Successful", []))

    # The receive loop: a failed handler gives the message back at once
    # (visibility 0), so its receives come one after another; the receive
    # after maxReceiveCount moves it to the dead-letter queue. The loop ends
    # at the first receive that finds nothing.
    report["handled"] = {src_url: [], fifo_url: []}
    report["errors"] = 0
    for url in (src_url, fifo_url):
        while True:
            msgs = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=1, WaitTimeSeconds=0,
                                       AttributeNames=["ApproximateReceiveCount"]).get("Messages", [])
            if not msgs:
                break
            m = msgs[0]
            report["handled"][url].append("%s#%s" % (m["Body"], m["Attributes"]["ApproximateReceiveCount"]))
            if "poison" in m["Body"]:
                report["errors"] += 1
                sqs.change_message_visibility(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"], VisibilityTimeout=0)
            else:
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
    step("consuming", wait=True)

    # SNS raw delivery: a filter on a message attribute, one on the body,
    # and a subscription whose queue is deleted, with a dead-letter queue.
    topic = sns.create_topic(Name="orders-events")["TopicArn"]
    eu_url, eu_arn = create_queue("orders-eu")
    big_url, big_arn = create_queue("orders-big")
    gone_url, gone_arn = create_queue("orders-gone")
    sub_dlq_url, sub_dlq_arn = create_queue("orders-events-dlq")

    def subscribe(arn, **attributes):
        attributes["RawMessageDelivery"] = "true"
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes=attributes, ReturnSubscriptionArn=True)

    subscribe(eu_arn, FilterPolicy=json.dumps({"region": ["eu"]}))
    subscribe(big_arn, FilterPolicy=json.dumps({"total": [{"numeric": [">=", 100]}]}), FilterPolicyScope="MessageBody")
    subscribe(gone_arn, RedrivePolicy=json.dumps({"deadLetterTargetArn": sub_dlq_arn}))
    sqs.delete_queue(QueueUrl=gone_url)
    for total, where in ((150, "eu"), (5, "us"), (500, "us")):
        sns.publish(TopicArn=topic, Message=json.dumps({"total": total}, separators=(",", ":")),
                    MessageAttributes={"region": {"DataType": "String", "StringValue": where}})
    # Publish returns once the copies are in their queues.
    eu = take(eu_url)
    report["sns"] = {
        "eu": bodies(eu),
        "euRegion": [m.get("MessageAttributes", {}).get("region", {}).get("StringValue", "") for m in eu],
        "big": bodies(take(big_url)),
    }
    step("published", wait=True)
    report["sns"]["deadLettered"] = bodies(take(sub_dlq_url))

    # CloudWatch: an alarm on the dead-letter queue's visible messages.
    alarm_topic = sns.create_topic(Name="dlq-alarms")["TopicArn"]
    ops_url, ops_arn = create_queue("ops")
    sns.subscribe(TopicArn=alarm_topic, Protocol="sqs", Endpoint=ops_arn)
    dimensions = [{"Name": "QueueName", "Value": "orders-dlq"}]
    cw.put_metric_alarm(
        AlarmName="orders-dlq-visible", Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible",
        Dimensions=dimensions, Statistic="Maximum", Period=60, EvaluationPeriods=1, Threshold=1,
        ComparisonOperator="GreaterThanOrEqualToThreshold", AlarmActions=[alarm_topic])
    minute = datetime.fromtimestamp(step("alarm-set", wait=True)["minute"] / 1000, timezone.utc)
    stats = cw.get_metric_statistics(
        Namespace="AWS/SQS", MetricName="ApproximateNumberOfMessagesVisible", Dimensions=dimensions,
        StartTime=minute, EndTime=minute + timedelta(minutes=1), Period=60, Statistics=["Maximum", "SampleCount"])
    alarms = cw.describe_alarms(AlarmNames=["orders-dlq-visible"])["MetricAlarms"]
    report["cloudwatch"] = {
        "datapoints": [{"time": int(d["Timestamp"].timestamp() * 1000), "maximum": d["Maximum"],
                        "samples": d["SampleCount"]} for d in stats.get("Datapoints", [])],
        "alarmState": alarms[0]["StateValue"] if alarms else None,
        "notifications": bodies(take(ops_url)),
    }

    # The redrive by hand, each message to the queue it came from.
    report["deadLetterSources"] = sqs.list_dead_letter_source_queues(QueueUrl=dlq_url).get("queueUrls", [])
    back = []
    for url in (dlq_url, fifo_dlq_url):
        for m in take(url):
            origin = m["Attributes"]["DeadLetterQueueSourceArn"].rsplit(":", 1)[1]
            entry = {"QueueUrl": sqs.get_queue_url(QueueName=origin)["QueueUrl"], "MessageBody": m["Body"]}
            if "MessageGroupId" in m["Attributes"]:
                entry["MessageGroupId"] = m["Attributes"]["MessageGroupId"]
                entry["MessageDeduplicationId"] = m["MessageId"]
            sqs.send_message(**entry)
    for url in (src_url, fifo_url):
        back += ["%s#%s" % (m["Body"], m["Attributes"]["ApproximateReceiveCount"]) for m in take(url)]
    report["moved"] = {"tasks": [], "back": back}

    step("report", **report)


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: python3 lifecycle.py ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY")
    main(*sys.argv[1:])
