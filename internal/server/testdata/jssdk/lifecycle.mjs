// Drives the dead-letter lifecycle through Ferry with the clients a
// Node.js application uses: sqs-producer sends, sqs-consumer consumes with a
// handler that fails on poison messages, and the AWS SDK for JavaScript v3
// (SQS, SNS, CloudWatch) does the rest. The Go test that runs it owns
// Ferry's clock, so the script goes in steps: at each step it prints one
// JSON line {"event": NAME, ...} on stdout and, where the test must act
// first (advance the clock, wait for a move), reads one JSON line on stdin
// before going on. The last line is the event "report"; the test judges it.
// ../boto3/lifecycle.py prints the same events.
//
// Usage: node lifecycle.mjs ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY

import { createInterface } from "node:readline";
import { once } from "node:events";
import {
  SQSClient, CreateQueueCommand, GetQueueAttributesCommand, SetQueueAttributesCommand, ReceiveMessageCommand, DeleteMessageCommand,
  DeleteQueueCommand, ListDeadLetterSourceQueuesCommand, StartMessageMoveTaskCommand, ListMessageMoveTasksCommand,
  CancelMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";
import { SNSClient, CreateTopicCommand, SubscribeCommand, PublishCommand } from "@aws-sdk/client-sns";
import {
  CloudWatchClient, PutMetricAlarmCommand, GetMetricStatisticsCommand, DescribeAlarmsCommand,
} from "@aws-sdk/client-cloudwatch";
import { Consumer } from "sqs-consumer";
import { Producer } from "sqs-producer";

const [endpoint, region, accessKeyId, secretAccessKey] = process.argv.slice(2);
if (!secretAccessKey) {
  console.error("usage: node lifecycle.mjs ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY");
  process.exit(2);
}
const config = { endpoint, region, credentials: { accessKeyId, secretAccessKey }, maxAttempts: 1 };
const sqs = new SQSClient(config);
const sns = new SNSClient(config);
const cw = new CloudWatchClient(config);

// stdout carries the events alone: what the libraries log goes to stderr.
console.log = console.info = console.warn = console.error;

const stdin = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// step prints an event; with wait it returns the test's answer.
async function step(event, fields = {}, wait = false) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
  if (!wait) return null;
  const line = await stdin.next();
  if (line.done) throw new Error(`stdin closed at ${event}`);
  return JSON.parse(line.value);
}

async function createQueue(name, attributes) {
  const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }));
  const { Attributes } = await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: ["QueueArn"] }));
  return { url: QueueUrl, arn: Attributes.QueueArn };
}

// take receives and deletes what the queue hands out.
async function take(url) {
  const out = await sqs.send(new ReceiveMessageCommand({
    QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"],
  }));
  const msgs = out.Messages ?? [];
  for (const m of msgs) await sqs.send(new DeleteMessageCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle }));
  return msgs;
}

const report = {};

// Queues: a standard and a FIFO source, each with a dead-letter queue that
// lets only that source in.
const dlq = await createQueue("orders-dlq", {});
const src = await createQueue("orders", {
  VisibilityTimeout: "30",
  RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount: 2 }),
});
await sqs.send(new SetQueueAttributesCommand({
  QueueUrl: dlq.url, Attributes: { RedriveAllowPolicy: JSON.stringify({ redrivePermission: "byQueue", sourceQueueArns: [src.arn] }) },
}));
const fifoDlq = await createQueue("orders-dlq.fifo", {
  FifoQueue: "true", RedriveAllowPolicy: JSON.stringify({ redrivePermission: "allowAll" }),
});
const fifo = await createQueue("orders.fifo", {
  FifoQueue: "true", VisibilityTimeout: "30",
  RedrivePolicy: JSON.stringify({ deadLetterTargetArn: fifoDlq.arn, maxReceiveCount: 2 }),
});
report.queues = { dlq: dlq.url, src: src.url, fifoDlq: fifoDlq.url, fifo: fifo.url };

// sqs-producer sends good and poison messages.
const producer = Producer.create({ queueUrl: src.url, sqs });
const sent = await producer.send([
  { id: "g1", body: "good-1" },
  { id: "p1", body: "poison-1", messageAttributes: { kind: { DataType: "String", StringValue: "order" } } },
  { id: "g2", body: "good-2" },
]);
const fifoProducer = Producer.create({ queueUrl: fifo.url, sqs });
const fifoSent = await fifoProducer.send(["f-good-1", "f-poison", "f-good-2"].map((body, i) => ({
  id: `f${i}`, body, groupId: "customer-7", deduplicationId: `d${i}`,
})));
report.sent = [...sent, ...fifoSent].map((r) => r.Id).sort();

// sqs-consumer: a failed handler gives the message back at once
// (terminateVisibilityTimeout), so its receives come one after another;
// the receive after maxReceiveCount moves it to the dead-letter queue.
report.handled = { [src.url]: [], [fifo.url]: [] };
report.errors = 0;
function consumer(queueUrl) {
  const c = Consumer.create({
    queueUrl, sqs, batchSize: 1, waitTimeSeconds: 20, terminateVisibilityTimeout: true, suppressFifoWarning: true,
    messageSystemAttributeNames: ["ApproximateReceiveCount"],
    handleMessage: async (m) => {
      report.handled[queueUrl].push(`${m.Body}#${m.Attributes?.ApproximateReceiveCount}`);
      if (m.Body.includes("poison")) throw new Error(`cannot process ${m.Body}`);
      return m;
    },
  });
  c.on("processing_error", () => { report.errors++; });
  c.on("error", (err) => { console.error("sqs-consumer error:", err); });
  c.start();
  return c;
}
const consumers = [consumer(src.url), consumer(fifo.url)];
await step("consuming", {}, true);
for (const c of consumers) {
  const stopped = once(c, "stopped");
  c.stop({ abort: true });
  await stopped;
}

// SNS: raw delivery into two queues, one filtering on a message attribute
// and one on the body; a third subscription's queue is deleted, so its
// copies go to the subscription's own dead-letter queue.
const topic = (await sns.send(new CreateTopicCommand({ Name: "orders-events" }))).TopicArn;
const eu = await createQueue("orders-eu", {});
const big = await createQueue("orders-big", {});
const gone = await createQueue("orders-gone", {});
const subDlq = await createQueue("orders-events-dlq", {});
const subscribe = (q, attributes) => sns.send(new SubscribeCommand({
  TopicArn: topic, Protocol: "sqs", Endpoint: q.arn, ReturnSubscriptionArn: true,
  Attributes: { RawMessageDelivery: "true", ...attributes },
}));
await subscribe(eu, { FilterPolicy: JSON.stringify({ region: ["eu"] }) });
await subscribe(big, { FilterPolicy: JSON.stringify({ total: [{ numeric: [">=", 100] }] }), FilterPolicyScope: "MessageBody" });
await subscribe(gone, { RedrivePolicy: JSON.stringify({ deadLetterTargetArn: subDlq.arn }) });
await sqs.send(new DeleteQueueCommand({ QueueUrl: gone.url }));
for (const [total, where] of [[150, "eu"], [5, "us"], [500, "us"]]) {
  await sns.send(new PublishCommand({
    TopicArn: topic, Message: JSON.stringify({ total }),
    MessageAttributes: { region: { DataType: "String", StringValue: where } },
  }));
}
// Publish returns once the copies are in their queues.
const bodies = (msgs) => msgs.map((m) => m.Body).sort();
const euMsgs = await take(eu.url);
report.sns = {
  eu: bodies(euMsgs),
  euRegion: euMsgs.map((m) => m.MessageAttributes?.region?.StringValue ?? ""),
  big: bodies(await take(big.url)),
};
await step("published", {}, true);
report.sns.deadLettered = bodies(await take(subDlq.url));

// CloudWatch: an alarm on the dead-letter queue's visible messages
// notifies a topic that a queue subscribes to. The test moves Ferry's
// clock over two minutes: one sample of the gauge, one evaluation.
const alarmTopic = (await sns.send(new CreateTopicCommand({ Name: "dlq-alarms" }))).TopicArn;
const ops = await createQueue("ops", {});
await sns.send(new SubscribeCommand({ TopicArn: alarmTopic, Protocol: "sqs", Endpoint: ops.arn }));
const dimensions = [{ Name: "QueueName", Value: "orders-dlq" }];
await cw.send(new PutMetricAlarmCommand({
  AlarmName: "orders-dlq-visible", Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible",
  Dimensions: dimensions, Statistic: "Maximum", Period: 60, EvaluationPeriods: 1, Threshold: 1,
  ComparisonOperator: "GreaterThanOrEqualToThreshold", AlarmActions: [alarmTopic],
}));
const { minute } = await step("alarm-set", {}, true);
const stats = await cw.send(new GetMetricStatisticsCommand({
  Namespace: "AWS/SQS", MetricName: "ApproximateNumberOfMessagesVisible", Dimensions: dimensions,
  StartTime: new Date(minute), EndTime: new Date(minute + 60e3), Period: 60, Statistics: ["Maximum", "SampleCount"],
}));
const alarms = await cw.send(new DescribeAlarmsCommand({ AlarmNames: ["orders-dlq-visible"] }));
report.cloudwatch = {
  datapoints: (stats.Datapoints ?? []).map((d) => ({ time: d.Timestamp.getTime(), maximum: d.Maximum, samples: d.SampleCount })),
  alarmState: alarms.MetricAlarms?.[0]?.StateValue,
  notifications: bodies(await take(ops.url)),
};

// Redrive: the dead-letter queue names its source; move tasks take each
// message back to where it came from.
const sources = await sqs.send(new ListDeadLetterSourceQueuesCommand({ QueueUrl: dlq.url }));
report.deadLetterSources = sources.queueUrls ?? [];
for (const q of [dlq, fifoDlq]) await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: q.arn }));
await step("moving", { sources: [dlq.arn, fifoDlq.arn] }, true);
const taskOf = async (q) => (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: q.arn, MaxResults: 10 }))).Results ?? [];
report.moved = { tasks: [...await taskOf(dlq), ...await taskOf(fifoDlq)], back: [] };
for (const q of [src, fifo]) {
  for (const m of await take(q.url)) report.moved.back.push(`${m.Body}#${m.Attributes.ApproximateReceiveCount}`);
}

// A second task, slowed to one message a second, is cancelled.
const slowProducer = Producer.create({ queueUrl: dlq.url, sqs });
await slowProducer.send(["late-1", "late-2", "late-3"]);
const slow = await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlq.arn, DestinationArn: src.arn, MaxNumberOfMessagesPerSecond: 1 }));
await step("slow-started", { source: dlq.arn }, true);
const running = (await taskOf(dlq))[0];
const cancelled = await sqs.send(new CancelMessageMoveTaskCommand({ TaskHandle: slow.TaskHandle }));
await step("cancelling", { source: dlq.arn }, true);
report.cancel = {
  running, cancelledMoved: cancelled.ApproximateNumberOfMessagesMoved, handle: slow.TaskHandle,
  tasks: await taskOf(dlq),
};

await step("report", report);
process.exit(0);
