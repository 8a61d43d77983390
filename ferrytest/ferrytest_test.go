package ferrytest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/ferrytest"
)

func createQueue(t *testing.T, c *sqs.Client, name string, attrs map[string]string) string {
	t.Helper()
	out, err := c.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

func receive(t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Messages)
}

// TestClockMovesOnlyWhenTold: a delayed message stays hidden on a frozen
// clock however long the test takes, and appears once Advance crosses its
// delay, not before.
func TestClockMovesOnlyWhenTold(t *testing.T) {
	f := ferrytest.Start(t)
	c := sqs.NewFromConfig(f.Config())
	url := createQueue(t, c, "delayed", nil)
	start := f.Now()
	if _, err := c.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url),
		MessageBody: aws.String("later"), DelaySeconds: 60}); err != nil {
		t.Fatal(err)
	}
	if got := f.Advance(59 * time.Second); !got.Equal(start.Add(59 * time.Second)) {
		t.Fatalf("Advance(59s) = %v, want %v: the clock moved on its own", got, start.Add(59*time.Second))
	}
	if n := receive(t, c, url); n != 0 {
		t.Fatalf("received %d messages 59 s into a 60 s delay", n)
	}
	f.Advance(time.Second)
	if n := receive(t, c, url); n != 1 {
		t.Fatalf("received %d messages at the end of the delay, want 1", n)
	}
	if err := f.SetTime(start); err == nil {
		t.Fatal("SetTime to the past was accepted")
	}
}

// TestFaults: a rule added through the helper makes the next receive fail
// with AWS's error, once, and counts it.
func TestFaults(t *testing.T) {
	f := ferrytest.Start(t)
	c := sqs.NewFromConfig(f.Config(), func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
	url := createQueue(t, c, "flaky", nil)
	id, err := f.AddFault(ferrytest.Fault{Queue: "flaky", Action: "ReceiveMessage", Count: 1, Error: "OverLimit"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "OverLimit" {
		t.Fatalf("receive under the rule: %v, want OverLimit", err)
	}
	receive(t, c, url) // the rule struck once: this one works
	l := f.Faults()
	if len(l.Rules) != 1 || l.Rules[0].ID != id || l.Rules[0].Injected != 1 {
		t.Fatalf("listing %+v, want rule %s injected once", l, id)
	}
	if _, err := f.AddFault(ferrytest.Fault{Queue: "flaky", Action: "ReceiveMessage", Error: "NoSuchError"}); err == nil {
		t.Fatal("a rule with an unknown error code was accepted")
	}
	f.ClearFaults()
	if n := len(f.Faults().Rules); n != 0 {
		t.Fatalf("%d rules left after ClearFaults", n)
	}
}

// TestOptions: the account, region and topology file options reach the
// server, and the history can be turned off.
func TestOptions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "topology.yaml")
	if err := os.WriteFile(file, []byte("queues:\n  - name: from-file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := ferrytest.Start(t, ferrytest.WithAccount("111122223333"), ferrytest.WithRegion("eu-west-1"),
		ferrytest.WithTopologyFile(file), ferrytest.WithoutFailureHistory())
	c := sqs.NewFromConfig(f.Config())
	out, err := c.GetQueueUrl(context.Background(), &sqs.GetQueueUrlInput{QueueName: aws.String("from-file")})
	if err != nil {
		t.Fatal(err)
	}
	if u := aws.ToString(out.QueueUrl); !strings.Contains(u, "111122223333") {
		t.Errorf("queue URL %s does not name the account", u)
	}
	arn, err := c.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatal(err)
	}
	if a := arn.Attributes["QueueArn"]; a != "arn:aws:sqs:eu-west-1:111122223333:from-file" {
		t.Errorf("QueueArn %s", a)
	}
	if _, err := f.History(context.Background(), aws.ToString(out.QueueUrl), "any"); err == nil || errors.Is(err, ferrytest.ErrNoHistory) {
		t.Errorf("History with the history off: %v, want the error saying it is off", err)
	}

	if _, err := ferrytest.New(context.Background(), ferrytest.WithTopologyFile(filepath.Join(t.TempDir(), "missing.yaml"))); err == nil {
		t.Error("a missing topology file was accepted")
	}
}
