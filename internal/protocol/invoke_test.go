package protocol

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// TestInvoke runs actions in-process: the input is decoded as the JSON
// wire decodes it, the action sees the account and region given, and its
// output and errors come back as they are.
func TestInvoke(t *testing.T) {
	t.Parallel()
	h, rec, _ := newTestHandler(t)
	ctx := context.Background()
	info := RequestInfo{Account: "123456789012", Region: "eu-west-1", Host: "localhost:4566"}

	var out struct{ QueueUrl string }
	in := map[string]any{"QueueName": "q", "Attributes": map[string]string{"DelaySeconds": "5"}, "tags": map[string]string{"k": "v"}}
	if err := h.Invoke(ctx, info, "sqs", "CreateQueue", in, &out); err != nil {
		t.Fatal(err)
	}
	if out.QueueUrl != "http://localhost/000000000000/q" {
		t.Errorf("output %+v", out)
	}
	action, got, seen := rec.last()
	want := &createQueueInput{QueueName: "q", Attributes: map[string]string{"DelaySeconds": "5"}, Tags: map[string]string{"k": "v"}}
	if action != "CreateQueue" || !reflect.DeepEqual(got, want) {
		t.Errorf("action saw %s %+v", action, got)
	}
	if seen.Account != "123456789012" || seen.Region != "eu-west-1" || seen.Host != "localhost:4566" || seen.Protocol != "json" || len(seen.RequestID) != requestIDLen {
		t.Errorf("action's info %+v", seen)
	}

	// A query-only service's action is decoded by its members' names.
	if err := h.Invoke(ctx, info, "sns", "CreateTopic", map[string]any{"Name": "t", "Tags": []map[string]string{{"Key": "a", "Value": "b"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, got, _ := rec.last(); !reflect.DeepEqual(got, &createTopicInput{Name: "t", Tags: []snsTag{{Key: "a", Value: "b"}}}) {
		t.Errorf("CreateTopic saw %+v", got)
	}

	err := h.Invoke(ctx, info, "sqs", "GetQueueUrl", map[string]any{}, &out)
	var e *Error
	if !errors.As(err, &e) || e.Code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("GetQueueUrl: %v", err)
	}
	// A member of the wrong type is the wire's SerializationException.
	if err := h.Invoke(ctx, info, "sqs", "Scalars", map[string]any{"I32": "x"}, nil); !errors.As(err, &e) || e.Code != ErrSerialization.Code {
		t.Errorf("bad member: %v", err)
	}
	for _, tt := range []struct{ service, action string }{{"s3", "CreateBucket"}, {"sqs", "CreateBucket"}} {
		if err := h.Invoke(ctx, info, tt.service, tt.action, nil, nil); err == nil || !strings.Contains(err.Error(), "no such") {
			t.Errorf("%s %s: %v", tt.service, tt.action, err)
		}
	}
}
