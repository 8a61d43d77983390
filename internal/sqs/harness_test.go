package sqs

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine/embedded"
	"github.com/ferrymq/ferry/internal/protocol"
)

const (
	testAccount = "123456789012"
	testRegion  = "eu-west-1"
	testBase    = "http://ferry.test:4566"
)

// harness drives the SQS actions directly, as the protocol layer would,
// against an in-memory embedded engine on a fake clock.
type harness struct {
	t   *testing.T
	svc *protocol.Service
	eng *embedded.Engine
	clk *clock.Fake
	ctx context.Context
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	clk := clock.NewFake(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))
	eng, err := embedded.Open(context.Background(), embedded.Options{InMemory: true, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close() })
	svc := NewService(Config{Account: testAccount, Region: testRegion, Backend: eng, Clock: clk, QueueURLBase: testBase})
	return &harness{t: t, svc: svc, eng: eng, clk: clk, ctx: context.Background()}
}

// call runs an action and returns its output or its AWS error; any other
// error fails the test.
func call[O any](h *harness, action string, in any) (*O, *protocol.Error) {
	h.t.Helper()
	return callCtx[O](h, h.ctx, action, in)
}

func callCtx[O any](h *harness, ctx context.Context, action string, in any) (*O, *protocol.Error) {
	h.t.Helper()
	a, ok := h.svc.Actions[action]
	if !ok {
		h.t.Fatalf("no action %s", action)
	}
	out, err := a.Handle(ctx, in)
	if err != nil {
		var perr *protocol.Error
		if !errors.As(err, &perr) {
			h.t.Fatalf("%s: not an AWS error: %v", action, err)
		}
		return nil, perr
	}
	return out.(*O), nil
}

// must runs an action that must succeed.
func must[O any](h *harness, action string, in any) *O {
	h.t.Helper()
	out, err := call[O](h, action, in)
	if err != nil {
		h.t.Fatalf("%s: %s: %s", action, err.Code, err.Message)
	}
	return out
}

// fails runs an action that must fail with the given query code and, when
// message is not empty, that message.
func fails(h *harness, action string, in any, code, message string) *protocol.Error {
	h.t.Helper()
	a := h.svc.Actions[action]
	_, err := a.Handle(h.ctx, in)
	var perr *protocol.Error
	if !errors.As(err, &perr) {
		h.t.Fatalf("%s: want %s, got %v", action, code, err)
	}
	if perr.Code != code || message != "" && perr.Message != message {
		h.t.Fatalf("%s: got %s %q (HTTP %d), want %s %q", action, perr.Code, perr.Message, perr.Status, code, message)
	}
	return perr
}

func (h *harness) createQueue(name string, attrs map[string]string) string {
	h.t.Helper()
	return must[CreateQueueOutput](h, "CreateQueue", &CreateQueueInput{QueueName: name, Attributes: attrs}).QueueUrl
}

func (h *harness) send(url, body string) *SendMessageOutput {
	h.t.Helper()
	return must[SendMessageOutput](h, "SendMessage", &SendMessageInput{QueueUrl: url, MessageBody: body})
}

func (h *harness) receive(in *ReceiveMessageInput) []Message {
	h.t.Helper()
	if in.WaitTimeSeconds == nil {
		in.WaitTimeSeconds = ptr(0)
	}
	return must[ReceiveMessageOutput](h, "ReceiveMessage", in).Messages
}

func (h *harness) attributes(url string, names ...string) map[string]string {
	h.t.Helper()
	return must[GetQueueAttributesOutput](h, "GetQueueAttributes", &GetQueueAttributesInput{QueueUrl: url, AttributeNames: names}).Attributes
}

func TestCodecsAcceptEveryAction(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ph := &protocol.Handler{Services: []*protocol.Service{h.svc}}
	if err := ph.Check(); err != nil {
		t.Fatal(err)
	}
	if len(h.svc.Actions) != 23 {
		t.Errorf("%d actions, want 23", len(h.svc.Actions))
	}
}
