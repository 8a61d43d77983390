#!/usr/bin/env bash
# A consumer's dead-letter path, tested with the AWS CLI against Ferry
# without waiting out a single timeout. Start Ferry for it, then run this
# script (it needs aws, ferry, curl and jq on the PATH):
#
#     ferry serve --memory --clock-control --fault-injection
#     bash dead-letter.sh
#
# FERRY_ENDPOINT (default http://localhost:4566) is where Ferry listens,
# FERRY_ADMIN_TOKEN its admin token if it has one; ferry reads both. The
# script resets that Ferry: point it at one kept for tests.
set -euo pipefail

export FERRY_ENDPOINT=${FERRY_ENDPOINT:-http://localhost:4566}
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=
sqs() { aws --endpoint-url "$FERRY_ENDPOINT" --output text sqs "$@"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

ferry reset >/dev/null
ferry clock freeze >/dev/null
trap 'ferry fault clear >/dev/null; ferry clock resume >/dev/null' EXIT

dlq=$(sqs create-queue --queue-name orders-dlq --query QueueUrl)
dlq_arn=$(sqs get-queue-attributes --queue-url "$dlq" --attribute-names QueueArn --query Attributes.QueueArn)
orders=$(sqs create-queue --queue-name orders --attributes "{\"VisibilityTimeout\": \"30\",
  \"RedrivePolicy\": \"{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":2}\"}" --query QueueUrl)
orders_arn=$(sqs get-queue-attributes --queue-url "$orders" --attribute-names QueueArn --query Attributes.QueueArn)
sent=$(sqs send-message --queue-url "$orders" --message-body '{"order": 42}' --query MessageId)

# SQS refuses the next receive: the script sees the error and tries again.
ferry fault add --queue orders --action ReceiveMessage --error OverLimit --count 1 >/dev/null
if out=$(sqs receive-message --queue-url "$orders" 2>&1); then fail "the receive should have failed: $out"; fi
grep -q OverLimit <<<"$out" || fail "the receive failed otherwise: $out"

# The consumer fails twice: it receives the message and does not delete it.
# Each time the message comes back once its 30 s visibility timeout has run
# out on Ferry's clock.
for count in 1 2; do
  got=$(sqs receive-message --queue-url "$orders" --attribute-names ApproximateReceiveCount \
    --query 'Messages[0].Attributes.ApproximateReceiveCount')
  [ "$got" = "$count" ] || fail "receive $count: ApproximateReceiveCount $got"
  ferry clock advance 30s >/dev/null
done
# The third receive finds it received maxReceiveCount times: SQS moves it to
# the dead-letter queue instead of handing it out.
[ -z "$(sqs receive-message --queue-url "$orders")" ] || fail "the third receive handed the message out"
visible() { sqs get-queue-attributes --queue-url "$1" --attribute-names ApproximateNumberOfMessages \
  --query Attributes.ApproximateNumberOfMessages; }
[ "$(visible "$dlq")" = 1 ] || fail "the dead-letter queue holds $(visible "$dlq") messages"

# Why it is there: its failure history.
story=$(curl -fsS ${FERRY_ADMIN_TOKEN:+-H "Authorization: Bearer $FERRY_ADMIN_TOKEN"} -G "$FERRY_ENDPOINT/_ferry/history" \
  --data-urlencode "queue=$dlq" --data-urlencode "message=$sent")
kinds=$(jq -r '[.events[].kind] | join(" ")' <<<"$story")
[ "$kinds" = "receive expiry receive expiry move" ] || fail "history: $kinds"
move=$(jq -r '.events[-1] | "\(.from) \(.to) \(.cause)"' <<<"$story")
[ "$move" = "$orders_arn $dlq_arn redrive" ] || fail "the move: $move"

# The bug is fixed: redrive, with a move task where the CLI has them (from
# June 2023 on), by hand where it does not.
if out=$(sqs start-message-move-task --source-arn "$dlq_arn" 2>&1); then
  for _ in $(seq 1000); do
    status=$(sqs list-message-move-tasks --source-arn "$dlq_arn" --query 'Results[0].Status')
    [ "$status" != RUNNING ] && break
  done
  [ "$status" = COMPLETED ] || fail "the move task is $status"
elif grep -q "Invalid choice" <<<"$out"; then
  m=$(sqs receive-message --queue-url "$dlq" --output json --query 'Messages[0]')
  sqs send-message --queue-url "$orders" --message-body "$(jq -r .Body <<<"$m")" >/dev/null
  sqs delete-message --queue-url "$dlq" --receipt-handle "$(jq -r .ReceiptHandle <<<"$m")"
else
  fail "start-message-move-task: $out"
fi

# The message is back in orders; the consumer handles it and deletes it.
m=$(sqs receive-message --queue-url "$orders" --attribute-names ApproximateReceiveCount --output json --query 'Messages[0]')
[ "$(jq -r .Body <<<"$m")" = '{"order": 42}' ] || fail "back in orders: $m"
[ "$(jq -r .Attributes.ApproximateReceiveCount <<<"$m")" = 1 ] || fail "back in orders: $m"
sqs delete-message --queue-url "$orders" --receipt-handle "$(jq -r .ReceiptHandle <<<"$m")"
echo "PASS: dead-letter path"
