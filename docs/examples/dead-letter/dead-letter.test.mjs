// A consumer's dead-letter path, tested against Ferry in well under a second.
//
// Start Ferry for it, then run this file with Node.js's test runner (it
// needs the AWS SDK for JavaScript v3: npm install @aws-sdk/client-sqs):
//
//     ferry serve --memory --clock-control --fault-injection
//     node --test dead-letter.test.mjs
//
// FERRY_ENDPOINT (default http://localhost:4566) is where Ferry listens,
// FERRY_ADMIN_TOKEN its admin token if it has one. The test resets that
// Ferry: point it at one kept for tests.
import assert from "node:assert/strict";
import { afterEach, beforeEach, test } from "node:test";
import {
  CreateQueueCommand,
  DeleteMessageCommand,
  GetQueueAttributesCommand,
  ListMessageMoveTasksCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  SQSClient,
  StartMessageMoveTaskCommand,
} from "@aws-sdk/client-sqs";

const endpoint = process.env.FERRY_ENDPOINT ?? "http://localhost:4566";

// ferry calls Ferry's admin API and returns its JSON answer.
async function ferry(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (process.env.FERRY_ADMIN_TOKEN) headers.Authorization = `Bearer ${process.env.FERRY_ADMIN_TOKEN}`;
  const res = await fetch(endpoint + path, { method, headers, body: body && JSON.stringify(body) });
  assert.ok(res.ok, `${method} ${path}: ${res.status} ${await res.clone().text()}`);
  return res.json();
}

// advance moves Ferry's clock forward: timeouts run out without waiting.
const advance = (duration) => ferry("POST", "/_ferry/clock/advance", { duration });

// poll is one round of the consumer under test: receive a message, handle
// it, delete it once handled. A message whose handling fails is left alone:
// it comes back when its visibility timeout runs out.
async function poll(sqs, QueueUrl, handle) {
  let got;
  try {
    got = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 1 }));
  } catch (err) {
    if (err.name === "OverLimit") return "over-limit"; // too many messages in flight: try later
    throw err;
  }
  const msg = got.Messages?.[0];
  if (!msg) return "empty";
  try {
    await handle(msg.Body);
  } catch {
    return "failed";
  }
  await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: msg.ReceiptHandle }));
  return "handled";
}

const broken = (body) => {
  throw new Error(`cannot handle ${body}`);
};

// eventually waits for work Ferry does on its own (a move task) to be done.
async function eventually(check, what) {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    assert.ok(Date.now() < deadline, `waited 10 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let sqs;
beforeEach(async () => {
  await ferry("POST", "/_ferry/reset");
  await ferry("POST", "/_ferry/clock/freeze");
  sqs = new SQSClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "test", secretAccessKey: "test" } });
});
afterEach(async () => {
  sqs.destroy();
  await ferry("DELETE", "/_ferry/faults");
  await ferry("POST", "/_ferry/clock/resume");
});

const attribute = async (QueueUrl, name) =>
  (await sqs.send(new GetQueueAttributesCommand({ QueueUrl, AttributeNames: [name] }))).Attributes[name];

test("a poison message goes to the dead-letter queue and back", async () => {
  const dlq = (await sqs.send(new CreateQueueCommand({ QueueName: "orders-dlq" }))).QueueUrl;
  const dlqArn = await attribute(dlq, "QueueArn");
  const orders = (
    await sqs.send(
      new CreateQueueCommand({
        QueueName: "orders",
        Attributes: {
          VisibilityTimeout: "30",
          RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlqArn, maxReceiveCount: 2 }),
        },
      }),
    )
  ).QueueUrl;
  const sent = (await sqs.send(new SendMessageCommand({ QueueUrl: orders, MessageBody: '{"order": 42}' }))).MessageId;

  // SQS refuses the next receive: the consumer copes and tries again.
  await ferry("POST", "/_ferry/faults", { queue: "orders", action: "ReceiveMessage", error: "OverLimit", count: 1 });
  assert.equal(await poll(sqs, orders, broken), "over-limit");

  // The handler fails twice; each time the message comes back once its
  // 30 s visibility timeout has run out on Ferry's clock.
  for (let i = 0; i < 2; i++) {
    assert.equal(await poll(sqs, orders, broken), "failed");
    await advance("30s");
  }
  // The third receive finds it received maxReceiveCount times: SQS moves
  // it to the dead-letter queue instead of handing it out.
  assert.equal(await poll(sqs, orders, broken), "empty");
  assert.equal(await attribute(dlq, "ApproximateNumberOfMessages"), "1");

  // Why it is there: its failure history.
  const query = new URLSearchParams({ queue: dlq, message: sent });
  const story = (await ferry("GET", `/_ferry/history?${query}`)).events;
  assert.deepEqual(
    story.map((e) => e.kind),
    ["receive", "expiry", "receive", "expiry", "move"],
  );
  const move = story.at(-1);
  assert.deepEqual([move.from, move.to, move.cause], [await attribute(orders, "QueueArn"), dlqArn, "redrive"]);

  // The bug is fixed: a move task takes the message back to orders, and it
  // is handled this time.
  await sqs.send(new StartMessageMoveTaskCommand({ SourceArn: dlqArn }));
  const task = async () => (await sqs.send(new ListMessageMoveTasksCommand({ SourceArn: dlqArn }))).Results[0];
  await eventually(async () => (await task()).Status === "COMPLETED", "the move task");
  assert.equal((await task()).ApproximateNumberOfMessagesMoved, 1);
  const handled = [];
  assert.equal(await poll(sqs, orders, (body) => handled.push(body)), "handled");
  assert.deepEqual(handled, ['{"order": 42}']);
  assert.equal(await attribute(dlq, "ApproximateNumberOfMessages"), "0");
  assert.equal(await attribute(orders, "ApproximateNumberOfMessages"), "0");
});
