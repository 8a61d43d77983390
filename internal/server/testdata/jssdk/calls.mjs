// Drives a Ferry that verifies signatures with the AWS SDK for JavaScript
// v3: a series of SQS, SNS and CloudWatch calls signed by the SDK, then
// calls signed with a wrong secret and with an unknown key. It prints what
// came back as one JSON document on stdout, the same shape as
// ../boto3/calls.py prints; the Go test judges it.
//
// Usage: node calls.mjs ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY

import { readFileSync } from "node:fs";
import {
  SQSClient, CreateQueueCommand, SendMessageCommand, ReceiveMessageCommand, DeleteMessageCommand,
  SendMessageBatchCommand, GetQueueAttributesCommand, ListQueuesCommand,
} from "@aws-sdk/client-sqs";
import { SNSClient, CreateTopicCommand, SubscribeCommand, PublishCommand, ListTopicsCommand } from "@aws-sdk/client-sns";
import { CloudWatchClient, ListMetricsCommand, GetMetricStatisticsCommand } from "@aws-sdk/client-cloudwatch";

const [endpoint, region, accessKeyId, secretAccessKey] = process.argv.slice(2);
if (!secretAccessKey) {
  console.error("usage: node calls.mjs ENDPOINT REGION ACCESS_KEY_ID SECRET_ACCESS_KEY");
  process.exit(2);
}

// The wire protocol of each request, by the service it was signed for.
const protocols = {};

function wireProtocol(headers) {
  const type = String(headers["content-type"] ?? "").split(";")[0];
  if (headers["smithy-protocol"] === "rpc-v2-cbor") return "rpcv2-cbor";
  if (type === "application/x-amz-json-1.0") return "json";
  if (type === "application/x-www-form-urlencoded") return "query";
  return "other: " + type;
}

function clients(key, secret) {
  // maxAttempts 1: an answer is judged as Ferry gave it, not retried.
  const config = { endpoint, region, credentials: { accessKeyId: key, secretAccessKey: secret }, maxAttempts: 1 };
  const made = {
    sqs: new SQSClient(config),
    sns: new SNSClient(config),
    cloudwatch: new CloudWatchClient(config),
  };
  for (const [service, client] of Object.entries(made)) {
    client.middlewareStack.add((next) => async (args) => {
      (protocols[service] ??= new Set()).add(wireProtocol(args.request.headers));
      return next(args);
    }, { step: "finalizeRequest", name: "ferryRecordProtocol" });
  }
  return made;
}

// failure describes the error of a call that must fail.
async function failure(call) {
  try {
    await call();
    return { code: "", status: 200, message: "the call succeeded" };
  } catch (err) {
    return { code: err.name ?? "", status: err.$metadata?.httpStatusCode ?? 0, message: err.message ?? String(err) };
  }
}

const c = clients(accessKeyId, secretAccessKey);
const out = { sdk: "aws-sdk-js/" + JSON.parse(readFileSync(new URL("./node_modules/@aws-sdk/client-sqs/package.json", import.meta.url))).version };

// SQS.
const queue = await c.sqs.send(new CreateQueueCommand({ QueueName: "signed", Attributes: { VisibilityTimeout: "45" } }));
const queueUrl = queue.QueueUrl;
const sent = await c.sqs.send(new SendMessageCommand({
  QueueUrl: queueUrl, MessageBody: "signed by the SDK: ünïcode & symbols +=/",
  MessageAttributes: {
    kind: { DataType: "String", StringValue: "test" },
    count: { DataType: "Number", StringValue: "7" },
    raw: { DataType: "Binary", BinaryValue: Uint8Array.from([0, 1, 2, 255]) },
  },
}));
const received = await c.sqs.send(new ReceiveMessageCommand({
  QueueUrl: queueUrl, MaxNumberOfMessages: 1, MessageAttributeNames: ["All"], MessageSystemAttributeNames: ["All"],
}));
const msg = received.Messages?.[0] ?? {};
await c.sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: msg.ReceiptHandle }));
const batch = await c.sqs.send(new SendMessageBatchCommand({
  QueueUrl: queueUrl, Entries: [
    { Id: "first", MessageBody: "one" },
    { Id: "second", MessageBody: "two", DelaySeconds: 0, MessageAttributes: { kind: { DataType: "String", StringValue: "batch" } } },
  ],
}));
const attrs = await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ["All"] }));
out.sqs = {
  queueUrl,
  sentMessageId: sent.MessageId,
  sentMD5OfMessageBody: sent.MD5OfMessageBody,
  received: {
    messageId: msg.MessageId,
    body: msg.Body,
    senderId: msg.Attributes?.SenderId,
    receiveCount: msg.Attributes?.ApproximateReceiveCount,
    kind: msg.MessageAttributes?.kind?.StringValue,
    count: msg.MessageAttributes?.count?.StringValue,
    raw: msg.MessageAttributes?.raw?.BinaryValue ? Buffer.from(msg.MessageAttributes.raw.BinaryValue).toString("base64") : null,
  },
  batchSuccessful: (batch.Successful ?? []).map((e) => e.Id).sort(),
  batchFailed: (batch.Failed ?? []).map((e) => e.Id),
  attributes: attrs.Attributes,
};

// SNS, delivering into a second queue of the same account.
const inbox = await c.sqs.send(new CreateQueueCommand({ QueueName: "signed-inbox" }));
const inboxArn = (await c.sqs.send(new GetQueueAttributesCommand({ QueueUrl: inbox.QueueUrl, AttributeNames: ["QueueArn"] }))).Attributes.QueueArn;
const topic = await c.sns.send(new CreateTopicCommand({ Name: "signed-events" }));
const sub = await c.sns.send(new SubscribeCommand({ TopicArn: topic.TopicArn, Protocol: "sqs", Endpoint: inboxArn, ReturnSubscriptionArn: true }));
const published = await c.sns.send(new PublishCommand({
  TopicArn: topic.TopicArn, Subject: "signed", Message: "published by the SDK",
  MessageAttributes: { kind: { DataType: "String", StringValue: "event" } },
}));
const topics = await c.sns.send(new ListTopicsCommand({}));
// Publish returns once the copy is in the queue.
const delivered = await c.sqs.send(new ReceiveMessageCommand({ QueueUrl: inbox.QueueUrl, MaxNumberOfMessages: 1 }));
out.sns = {
  topicArn: topic.TopicArn,
  subscriptionArn: sub.SubscriptionArn,
  publishedMessageId: published.MessageId,
  topics: (topics.Topics ?? []).map((t) => t.TopicArn),
  delivered: delivered.Messages?.[0]?.Body ?? null,
};

// CloudWatch: Ferry's own SQS metrics of the queue above.
const now = Date.now();
const metrics = await c.cloudwatch.send(new ListMetricsCommand({
  Namespace: "AWS/SQS", Dimensions: [{ Name: "QueueName", Value: "signed" }],
}));
const stats = await c.cloudwatch.send(new GetMetricStatisticsCommand({
  Namespace: "AWS/SQS", MetricName: "NumberOfMessagesSent", Dimensions: [{ Name: "QueueName", Value: "signed" }],
  StartTime: new Date(now - 3600e3), EndTime: new Date(now + 3600e3), Period: 3600, Statistics: ["Sum"],
}));
out.cloudwatch = {
  metrics: [...new Set((metrics.Metrics ?? []).map((m) => m.MetricName))].sort(),
  label: stats.Label,
  sum: (stats.Datapoints ?? []).reduce((s, d) => s + d.Sum, 0),
};

// Signatures Ferry must refuse, on every service.
const wrongSecret = clients(accessKeyId, secretAccessKey + "-wrong");
const unknownKey = clients("AKIAUNKNOWN000000000", secretAccessKey);
out.refused = {};
for (const [name, cs] of [["wrongSecret", wrongSecret], ["unknownKey", unknownKey]]) {
  out.refused[name] = {
    sqs: await failure(() => cs.sqs.send(new ListQueuesCommand({}))),
    sns: await failure(() => cs.sns.send(new ListTopicsCommand({}))),
    cloudwatch: await failure(() => cs.cloudwatch.send(new ListMetricsCommand({}))),
  };
}

out.protocols = Object.fromEntries(Object.entries(protocols).map(([k, v]) => [k, [...v].sort()]));
process.stdout.write(JSON.stringify(out) + "\n");
