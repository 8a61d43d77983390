package sqs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/testwait"
)

func TestListDeadLetterSourceQueues(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	other := h.createQueue("other-dlq", nil)
	var want []string
	for _, n := range []string{"e", "a", "d", "c", "b"} {
		want = append(want, h.createQueue("src-"+n, map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)}))
	}
	slices.Sort(want)
	h.createQueue("elsewhere", map[string]string{"RedrivePolicy": policy(testARN("other-dlq"), 3)})
	h.createQueue("plain", nil)

	list := func(in ListDeadLetterSourceQueuesInput) *ListDeadLetterSourceQueuesOutput {
		return must[ListDeadLetterSourceQueuesOutput](h, "ListDeadLetterSourceQueues", &in)
	}
	if out := list(ListDeadLetterSourceQueuesInput{QueueUrl: dlq}); !slices.Equal(out.QueueUrls, want) || out.NextToken != "" {
		t.Errorf("all = %v, token %q", out.QueueUrls, out.NextToken)
	}
	// Pages of two: 2, 2, 1, the last without a token.
	var got []string
	token := ""
	for page := 0; ; page++ {
		out := list(ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: ptr(2), NextToken: token})
		if wantLen := min(2, 5-2*page); len(out.QueueUrls) != wantLen {
			t.Fatalf("page %d has %d urls", page, len(out.QueueUrls))
		}
		got = append(got, out.QueueUrls...)
		if token = out.NextToken; token == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged = %v", got)
	}
	// A page that ends exactly at the end has no token.
	if out := list(ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: ptr(5)}); len(out.QueueUrls) != 5 || out.NextToken != "" {
		t.Errorf("exact page = %v, %q", out.QueueUrls, out.NextToken)
	}
	if out := list(ListDeadLetterSourceQueuesInput{QueueUrl: other}); !slices.Equal(out.QueueUrls, []string{testBase + "/" + testAccount + "/elsewhere"}) {
		t.Errorf("other = %v", out.QueueUrls)
	}
	// No sources: an empty list, not an absent one (queueUrls is required).
	out := list(ListDeadLetterSourceQueuesInput{QueueUrl: testBase + "/" + testAccount + "/plain"})
	if b, _ := json.Marshal(out); string(b) != `{"queueUrls":[]}` {
		t.Errorf("empty = %s", b)
	}

	tests := []struct {
		name    string
		in      ListDeadLetterSourceQueuesInput
		code    string
		message string
	}{
		{"missing queue", ListDeadLetterSourceQueuesInput{QueueUrl: testBase + "/" + testAccount + "/nope"}, "AWS.SimpleQueueService.NonExistentQueue", "The specified queue does not exist."},
		{"MaxResults 0", ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: ptr(0)}, "InvalidParameterValue",
			"Value 0 for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000."},
		{"MaxResults 1001", ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: ptr(1001)}, "InvalidParameterValue",
			"Value 1001 for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000."},
		{"bad token", ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: ptr(1), NextToken: "!!"}, "InvalidParameterValue", "Invalid NextToken value."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := fails(h, "ListDeadLetterSourceQueues", &tt.in, tt.code, tt.message); err.Status != http.StatusBadRequest {
				t.Errorf("status %d", err.Status)
			}
		})
	}
}

func TestMoveTaskValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.createQueue("dlq", nil)
	h.createQueue("src", map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)})
	h.createQueue("dest", nil)
	if _, _, err := h.eng.CreateQueue(h.ctx, engine.Queue{Account: testAccount, Name: "oddball", ARN: testARN("oddball"),
		Attributes: map[string]string{"FifoQueue": "true"}}); err != nil {
		t.Fatal(err)
	}
	const (
		format      = "You must use this format to specify the %s: arn:<partition>:<service>:<region>:<account-id>:<resource-id>"
		notFound    = "The resource that you specified for the %s parameter doesn't exist."
		rateMessage = "Value for parameter MaxNumberOfMessagesPerSecond is invalid. Reason: You must enter a number that's between 1 and 500."
	)
	tests := []struct {
		name    string
		action  string
		in      any
		code    string
		status  int
		message string
	}{
		{"start: no source", "StartMessageMoveTask", &StartMessageMoveTaskInput{}, "MissingParameter", 400, "The request must contain the parameter SourceArn."},
		{"start: malformed source", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: "dlq"}, "InvalidParameterValue", 400, fmt.Sprintf(format, "SourceArn")},
		{"start: missing source", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("nothing")}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "SourceArn")},
		{"start: source in another region", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: "arn:aws:sqs:us-east-1:" + testAccount + ":dlq"}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "SourceArn")},
		{"start: source of another account", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: "arn:aws:sqs:" + testRegion + ":111111111111:dlq"}, "AccessDenied", 403,
			"User: arn:aws:iam::" + testAccount + ":root is not authorized to perform: sqs:startmessagemovetask on resource: arn:aws:sqs:" + testRegion + ":111111111111:dlq because no resource-based policy allows the sqs:startmessagemovetask action"},
		{"start: source not a queue", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: "arn:aws:sns:" + testRegion + ":" + testAccount + ":dlq"}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "SourceArn")},
		{"start: not a dead-letter queue", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("src")}, "InvalidParameterValue", 400, "Source queue must be configured as a Dead Letter Queue."},
		{"start: malformed destination", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: "invalid"}, "InvalidParameterValue", 400, fmt.Sprintf(format, "DestinationArn")},
		{"start: destination is source", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("dlq")}, "InvalidParameterValue", 400, "Source queue arn and destination queue arn cannot be the same."},
		{"start: missing destination", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("nothing")}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "DestinationArn")},
		{"start: destination of another type", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("oddball")}, "InvalidParameterValue", 400, "The source queue and destination queue must be of the same queue type."},
		{"start: rate 0", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), MaxNumberOfMessagesPerSecond: ptr(0)}, "InvalidParameterValue", 400, rateMessage},
		{"start: rate 501", "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("dest"), MaxNumberOfMessagesPerSecond: ptr(501)}, "InvalidParameterValue", 400, rateMessage},

		{"list: no source", "ListMessageMoveTasks", &ListMessageMoveTasksInput{}, "MissingParameter", 400, "The request must contain the parameter SourceArn."},
		{"list: malformed source", "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: "arn:aws:sqs"}, "InvalidParameterValue", 400, fmt.Sprintf(format, "SourceArn")},
		{"list: MaxResults 0", "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: testARN("dlq"), MaxResults: ptr(0)}, "InvalidParameterValue", 400, "Value 0 for parameter MaxResults is invalid. Reason: Must be between 1 and 10."},
		{"list: MaxResults 11", "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: testARN("dlq"), MaxResults: ptr(11)}, "InvalidParameterValue", 400, "Value 11 for parameter MaxResults is invalid. Reason: Must be between 1 and 10."},
		{"list: missing source", "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: testARN("nothing")}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "SourceArn")},

		{"cancel: no handle", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{}, "MissingParameter", 400, "The request must contain the parameter TaskHandle."},
		{"cancel: not base64", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: "not-a-handle"}, "InvalidParameterValue", 400, "Value for parameter TaskHandle is invalid."},
		{"cancel: not JSON", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: base64.StdEncoding.EncodeToString([]byte("foobared"))}, "InvalidParameterValue", 400, "Value for parameter TaskHandle is invalid."},
		{"cancel: no task id", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("", testARN("dlq"))}, "InvalidParameterValue", 400, "Value for parameter TaskHandle is invalid."},
		{"cancel: malformed source", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("t", "dlq")}, "InvalidParameterValue", 400, "Value for parameter TaskHandle is invalid."},
		{"cancel: missing source", "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("t", testARN("nothing"))}, "ResourceNotFoundException", 404, fmt.Sprintf(notFound, "SourceArn")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := fails(h, tt.action, tt.in, tt.code, tt.message); err.Status != tt.status {
				t.Errorf("status %d, want %d", err.Status, tt.status)
			}
		})
	}
}

func TestTaskHandle(t *testing.T) {
	t.Parallel()
	h := encodeTaskHandle("id-1", testARN("dlq"))
	b, err := base64.StdEncoding.DecodeString(h)
	if err != nil || string(b) != `{"taskId":"id-1","sourceArn":"`+testARN("dlq")+`"}` {
		t.Fatalf("handle %s decodes to %s (%v)", h, b, err)
	}
	id, src, ok := decodeTaskHandle(h)
	if !ok || id != "id-1" || src != testARN("dlq") {
		t.Errorf("decoded %q %q %v", id, src, ok)
	}
}

// listTasks returns the source's newest tasks, up to max.
func (h *harness) listTasks(source string, max int) []ListMessageMoveTasksResultEntry {
	h.t.Helper()
	return must[ListMessageMoveTasksOutput](h, "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: source, MaxResults: ptr(max)}).Results
}

// waitStatus moves the fake clock a second at a time until the source's
// newest task has the status, and returns it.
func (h *harness) waitStatus(source string, status engine.MoveTaskStatus) ListMessageMoveTasksResultEntry {
	h.t.Helper()
	var last ListMessageMoveTasksResultEntry
	testwait.Eventually(h.t, "task "+string(status), func() bool {
		if last = h.listTasks(source, 1)[0]; last.Status == string(status) {
			return true
		}
		h.clk.Advance(time.Second)
		return false
	})
	return last
}

func (h *harness) visible(name string) int64 {
	h.t.Helper()
	st, err := h.eng.Stats(h.ctx, testAccount, name)
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Visible
}

func TestMoveTaskLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	dlq := h.createQueue("dlq", nil)
	h.createQueue("src", map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)})
	dest := h.createQueue("dest", nil)
	for i := range 20 {
		h.send(dlq, fmt.Sprint("m", i))
	}
	startedAt := h.clk.Now()
	start := must[StartMessageMoveTaskOutput](h, "StartMessageMoveTask", &StartMessageMoveTaskInput{
		SourceArn: testARN("dlq"), DestinationArn: testARN("dest"), MaxNumberOfMessagesPerSecond: ptr(2)})
	id, src, ok := decodeTaskHandle(start.TaskHandle)
	if !ok || id == "" || src != testARN("dlq") {
		t.Fatalf("handle %q: %q %q", start.TaskHandle, id, src)
	}
	fails(h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq")}, "InvalidParameterValue",
		"There is already a task running. Only one active task is allowed for a source queue arn at a given time.")

	running := h.listTasks(testARN("dlq"), 1)
	if len(running) != 1 {
		t.Fatalf("tasks = %+v", running)
	}
	r := running[0]
	if r.Status != "RUNNING" || r.TaskHandle != start.TaskHandle || r.SourceArn != testARN("dlq") || r.DestinationArn != testARN("dest") ||
		r.MaxNumberOfMessagesPerSecond == nil || *r.MaxNumberOfMessagesPerSecond != 2 || r.ApproximateNumberOfMessagesToMove == nil ||
		*r.ApproximateNumberOfMessagesToMove != 20 || r.StartedTimestamp != startedAt.UnixMilli() || r.FailureReason != "" {
		t.Errorf("running task = %+v", r)
	}
	// At 2 a second, never more than 2 per second of the fake clock (plus
	// one burst), and progress as the clock moves.
	moved := func() int64 { return h.listTasks(testARN("dlq"), 1)[0].ApproximateNumberOfMessagesMoved }
	for sec := int64(1); sec <= 3; sec++ {
		// The runner waits on the clock once its slot is full: a move of
		// the clock before that wait begins would not be seen by it.
		testwait.Pending(t, h.clk, 1)
		h.clk.Advance(time.Second)
		testwait.Eventually(t, fmt.Sprintf("%d moved after %d s", 2*(sec-1)+1, sec), func() bool { return moved() > 2*(sec-1) })
		if m := moved(); m > 2*(sec+1) {
			t.Fatalf("%d moved after %d s at 2/s", m, sec)
		}
	}

	cancel := must[CancelMessageMoveTaskOutput](h, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle})
	cancelled := h.waitStatus(testARN("dlq"), engine.MoveTaskCancelled)
	if cancelled.TaskHandle != "" || cancelled.ApproximateNumberOfMessagesMoved < cancel.ApproximateNumberOfMessagesMoved ||
		cancelled.ApproximateNumberOfMessagesMoved >= 20 {
		t.Errorf("cancelled task = %+v (cancel said %d)", cancelled, cancel.ApproximateNumberOfMessagesMoved)
	}
	h.clk.Advance(10 * time.Second)
	n := cancelled.ApproximateNumberOfMessagesMoved
	if m := moved(); m != n {
		t.Errorf("moved %d after cancelling at %d", m, n)
	}
	if h.visible("dest") != n || h.visible("dlq") != 20-n {
		t.Errorf("dest %d, dlq %d after moving %d", h.visible("dest"), h.visible("dlq"), n)
	}
	fails(h, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle}, "ResourceNotFoundException", "Task does not exist.")
	fails(h, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("no-such-task", testARN("dlq"))}, "ResourceNotFoundException", "Task does not exist.")

	// Without a rate the rest moves and the task completes.
	second := must[StartMessageMoveTaskOutput](h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("dest")})
	done := h.waitStatus(testARN("dlq"), engine.MoveTaskCompleted)
	if done.TaskHandle != "" || done.MaxNumberOfMessagesPerSecond != nil || done.DestinationArn != testARN("dest") ||
		done.ApproximateNumberOfMessagesMoved != 20-n || done.ApproximateNumberOfMessagesToMove == nil || *done.ApproximateNumberOfMessagesToMove != 20-n {
		t.Errorf("completed task = %+v", done)
	}
	if h.visible("dest") != 20 || h.visible("dlq") != 0 {
		t.Errorf("dest %d, dlq %d", h.visible("dest"), h.visible("dlq"))
	}
	fails(h, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: second.TaskHandle}, "ResourceNotFoundException", "Task does not exist.")

	// A destination deleted mid-task fails the task; nothing is lost.
	for i := range 5 {
		h.send(dlq, fmt.Sprint("n", i))
	}
	must[StartMessageMoveTaskOutput](h, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq"), DestinationArn: testARN("dest"),
		MaxNumberOfMessagesPerSecond: ptr(1)})
	must[EmptyOutput](h, "DeleteQueue", &QueueInput{QueueUrl: dest})
	failed := h.waitStatus(testARN("dlq"), engine.MoveTaskFailed)
	if failed.FailureReason != "AWS.SimpleQueueService.NonExistentQueue" || failed.TaskHandle != "" {
		t.Errorf("failed task = %+v", failed)
	}
	if got := failed.ApproximateNumberOfMessagesMoved + h.visible("dlq"); got != 5 {
		t.Errorf("moved %d, left %d of 5", failed.ApproximateNumberOfMessagesMoved, h.visible("dlq"))
	}

	all := h.listTasks(testARN("dlq"), 10)
	var statuses []string
	for _, e := range all {
		statuses = append(statuses, e.Status)
	}
	if !slices.Equal(statuses, []string{"FAILED", "COMPLETED", "CANCELLED"}) {
		t.Errorf("statuses = %v", statuses)
	}
	if got := must[ListMessageMoveTasksOutput](h, "ListMessageMoveTasks", &ListMessageMoveTasksInput{SourceArn: testARN("dlq")}).Results; len(got) != 1 {
		t.Errorf("default MaxResults listed %d", len(got))
	}
	// The cancel of a task whose source is gone names the source.
	must[EmptyOutput](h, "DeleteQueue", &QueueInput{QueueUrl: dlq})
	fails(h, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: start.TaskHandle}, "ResourceNotFoundException",
		"The resource that you specified for the SourceArn parameter doesn't exist.")
}

// stubBackend answers the move task calls with fixed errors.
type stubBackend struct {
	engine.Backend
	startErr, cancelErr error
	tasks               []engine.MoveTask // ListMoveTasks answers these when set
}

func (b stubBackend) ListMoveTasks(ctx context.Context, account, name string) ([]engine.MoveTask, error) {
	if b.tasks != nil {
		return b.tasks, nil
	}
	return b.Backend.ListMoveTasks(ctx, account, name)
}

func (b stubBackend) StartMoveTask(context.Context, engine.MoveTask) (engine.MoveTask, error) {
	return engine.MoveTask{}, b.startErr
}

func (b stubBackend) CancelMoveTask(context.Context, string, string, string) (engine.MoveTask, error) {
	return engine.MoveTask{}, b.cancelErr
}

// TestMoveTaskFailureReasons: ListMessageMoveTasks words the engine's
// failure reasons as SQS does.
func TestMoveTaskFailureReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		reason engine.MoveTaskFailure
		want   string
	}{
		{engine.MoveTaskFailureNonExistentQueue, "AWS.SimpleQueueService.NonExistentQueue"},
		{engine.MoveTaskFailureTimedOut, "AWS.SimpleQueueService.MoveTaskTimedOut"},
		{engine.MoveTaskFailureStore, "AWS.SimpleQueueService.InternalError"},
		{"reason of a newer store", "AWS.SimpleQueueService.InternalError"},
	}
	for _, tt := range tests {
		t.Run(string(tt.reason), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.createQueue("dlq", nil)
			stub := stubBackend{Backend: h.eng, tasks: []engine.MoveTask{{ID: "t", SourceAccount: testAccount, SourceName: "dlq",
				SourceARN: testARN("dlq"), Status: engine.MoveTaskFailed, FailureReason: tt.reason}}}
			h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: stub, Clock: h.clk, QueueURLBase: testBase})
			if got := h.listTasks(testARN("dlq"), 1); len(got) != 1 || got[0].FailureReason != tt.want {
				t.Fatalf("tasks %+v, want FailureReason %q", got, tt.want)
			}
		})
	}
}

func TestMoveTaskEngineErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stub    stubBackend
		action  string
		in      any
		code    string
		status  int
		message string
	}{
		{"task limit", stubBackend{startErr: fmt.Errorf("wrapped: %w", engine.ErrMoveTaskLimit)}, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq")},
			"OverLimit", http.StatusForbidden, "An account can have at most 100 active message move tasks."},
		{"task active", stubBackend{startErr: engine.ErrMoveTaskActive}, "StartMessageMoveTask", &StartMessageMoveTaskInput{SourceArn: testARN("dlq")},
			"InvalidParameterValue", http.StatusBadRequest, "There is already a task running. Only one active task is allowed for a source queue arn at a given time."},
		{"not running", stubBackend{cancelErr: engine.ErrMoveTaskNotRunning}, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("t", testARN("dlq"))},
			"ResourceNotFoundException", http.StatusNotFound, "Task does not exist."},
		{"not found", stubBackend{cancelErr: engine.ErrMoveTaskNotFound}, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("t", testARN("dlq"))},
			"ResourceNotFoundException", http.StatusNotFound, "Task does not exist."},
		{"source deleted meanwhile", stubBackend{cancelErr: engine.ErrQueueNotFound}, "CancelMessageMoveTask", &CancelMessageMoveTaskInput{TaskHandle: encodeTaskHandle("t", testARN("dlq"))},
			"ResourceNotFoundException", http.StatusNotFound, "The resource that you specified for the SourceArn parameter doesn't exist."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t)
			h.createQueue("dlq", nil)
			h.createQueue("src", map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)})
			tt.stub.Backend = h.eng
			h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: tt.stub, Clock: h.clk, QueueURLBase: testBase})
			if err := fails(h, tt.action, tt.in, tt.code, tt.message); err.Status != tt.status {
				t.Errorf("status %d", err.Status)
			}
		})
	}
	// Any other engine failure is an internal error, not an AWS one.
	h := newHarness(t)
	h.createQueue("dlq", nil)
	h.createQueue("src", map[string]string{"RedrivePolicy": policy(testARN("dlq"), 3)})
	h.svc = NewService(Config{Account: testAccount, Region: testRegion, Backend: stubBackend{Backend: h.eng, startErr: errors.New("disk on fire")}, Clock: h.clk})
	_, err := h.svc.Actions["StartMessageMoveTask"].Handle(h.ctx, &StartMessageMoveTaskInput{SourceArn: testARN("dlq")})
	var perr *protocol.Error
	if err == nil || errors.As(err, &perr) {
		t.Errorf("engine failure answered %v", err)
	}
}
