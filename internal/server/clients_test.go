package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/testwait"
)

// The dead-letter lifecycle as the client libraries people use drive it:
// each test runs a real client program against a Ferry of its own, and
// judges what the program saw and what Ferry holds.

// stepper runs a client program that goes in steps: it prints one JSON
// line {"event": NAME, ...} per step on stdout and, where the test must act
// first (Ferry's clock is the test's), reads one JSON line on stdin.
type stepper struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *bytes.Buffer
}

// startSteps starts prog with args, then f's endpoint, region, key and
// secret, in env; it is bound by a deadline and killed with the test.
func startSteps(t *testing.T, f *ferry, env []string, prog string, args ...string) *stepper {
	t.Helper()
	// A client starts in a second or two; the bound is for a machine busy
	// with the race detector.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, prog, append(args, f.srv.URL(), "us-east-1", harnessKey, harnessSecret)...)
	cmd.Env = env
	cmd.WaitDelay = 5 * time.Second
	s := &stepper{t: t, name: filepath.Base(args[len(args)-1]), cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = s.stderr
	var err error
	if s.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.lines = bufio.NewScanner(out)
	s.lines.Buffer(nil, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	return s
}

// next reads the program's next event, which must be one of names, and
// decodes it into v (when not nil); it returns the event's name.
func (s *stepper) next(v any, names ...string) string {
	s.t.Helper()
	if !s.lines.Scan() {
		err := s.cmd.Wait()
		s.t.Fatalf("%s ended before %v: %v %v\n%s", s.name, names, s.lines.Err(), err, s.stderr)
	}
	line := s.lines.Bytes()
	var ev struct{ Event string }
	if err := json.Unmarshal(line, &ev); err != nil || !slices.Contains(names, ev.Event) {
		s.t.Fatalf("%s printed %q (%v), want one of the events %v\n%s", s.name, line, err, names, s.stderr)
	}
	if v != nil {
		if err := json.Unmarshal(line, v); err != nil {
			s.t.Fatalf("%s event %s: %v", s.name, line, err)
		}
	}
	return ev.Event
}

// resume answers the step the program waits at with v as one JSON line.
func (s *stepper) resume(v any) {
	s.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.stdin.Write(append(b, '\n')); err != nil {
		s.t.Fatalf("%s: %v\n%s", s.name, err, s.stderr)
	}
}

// end waits for the program to exit, which it must do on its own.
func (s *stepper) end() {
	s.t.Helper()
	s.stdin.Close()
	if err := s.cmd.Wait(); err != nil {
		s.t.Fatalf("%s: %v\n%s", s.name, err, s.stderr)
	}
}

// stats is what the engine counts in the queue of the harness's account.
func (f *ferry) stats(t testing.TB, queue string) engine.Stats {
	t.Helper()
	st, err := f.srv.Engine().Stats(context.Background(), "000000000000", queue)
	if err != nil {
		t.Fatalf("stats of %s: %v", queue, err)
	}
	return st
}

// waitHolds waits until each named queue holds exactly the visible count
// given and nothing in flight or delayed.
func (f *ferry) waitHolds(t testing.TB, visible map[string]int64) {
	t.Helper()
	testwait.Eventually(t, fmt.Sprintf("queues to hold %v", visible), func() bool {
		for q, n := range visible {
			if st := f.stats(t, q); st.Visible != n || st.NotVisible != 0 || st.Delayed != 0 {
				return false
			}
		}
		return true
	})
}

// moveTask is a ListMessageMoveTasks entry as a client program reports it.
type moveTask struct {
	Status                            string
	SourceArn                         string
	DestinationArn                    string
	TaskHandle                        string
	ApproximateNumberOfMessagesMoved  int64
	ApproximateNumberOfMessagesToMove int64
	MaxNumberOfMessagesPerSecond      int32
}

// lifecycleReport is the last event of testdata/jssdk/lifecycle.mjs and
// testdata/boto3/lifecycle.py.
type lifecycleReport struct {
	Queues struct{ Dlq, Src, FifoDlq, Fifo string }
	Sent   []string
	// Handled lists, per queue URL, body#ApproximateReceiveCount of each
	// message the consumer's handler was given, in order.
	Handled map[string][]string
	Errors  int
	SNS     struct {
		EU, EURegion, Big, DeadLettered []string
	}
	CloudWatch struct {
		Datapoints []struct {
			Time    int64
			Maximum float64
			Samples float64
		}
		AlarmState    string
		Notifications []string
	}
	DeadLetterSources []string
	Moved             struct {
		Tasks []moveTask
		// Back lists body#ApproximateReceiveCount of what returned to the
		// sources.
		Back []string
	}
	Cancel *struct {
		Running        moveTask
		CancelledMoved int64
		Handle         string
		Tasks          []moveTask
	}
}

// driveLifecycle answers the steps of a lifecycle program and returns its
// report, having checked what Ferry holds at each step.
func driveLifecycle(t *testing.T, f *ferry, s *stepper) lifecycleReport {
	t.Helper()
	for {
		var ev struct {
			Event   string
			Sources []string
			Source  string
			lifecycleReport
		}
		switch s.next(&ev, "consuming", "published", "alarm-set", "moving", "slow-started", "cancelling", "report") {
		case "consuming":
			// Each poison message reaches its dead-letter queue after two
			// failed receives; the good ones are deleted.
			f.waitHolds(t, map[string]int64{"orders-dlq": 1, "orders": 0, "orders-dlq.fifo": 1, "orders.fifo": 0})
			s.resume(struct{}{})
		case "published":
			// Every copy of the deleted queue's subscription.
			f.waitHolds(t, map[string]int64{"orders-events-dlq": 3})
			s.resume(struct{}{})
		case "alarm-set":
			// One sample of the gauge, then the evaluation of its minute.
			sampled := f.tick(t)
			f.tick(t)
			testwait.Eventually(t, "the alarm's notification", func() bool { return f.stats(t, "ops").Visible == 1 })
			s.resume(map[string]int64{"minute": sampled.UnixMilli()})
		case "moving":
			for _, src := range ev.Sources {
				f.waitTask(t, src, "COMPLETED")
			}
			s.resume(struct{}{})
		case "slow-started":
			// The first second's message moved; the task waits for the next.
			testwait.Eventually(t, "the slow task to move one and wait", func() bool {
				return f.waitTask(t, ev.Source, "RUNNING").ApproximateNumberOfMessagesMoved == 1 && f.runnerWaits()
			})
			s.resume(struct{}{})
		case "cancelling":
			// A runner waiting for its next second ends at that second.
			f.clk.Advance(time.Second)
			f.waitTask(t, ev.Source, "CANCELLED")
			s.resume(struct{}{})
		case "report":
			s.end()
			return ev.lifecycleReport
		}
	}
}

// checkLifecycle checks what a lifecycle program reported.
func checkLifecycle(t *testing.T, f *ferry, r lifecycleReport) {
	t.Helper()
	base := f.srv.URL() + "/000000000000/"
	if r.Queues.Src != base+"orders" || r.Queues.Dlq != base+"orders-dlq" || r.Queues.Fifo != base+"orders.fifo" {
		t.Errorf("queues = %+v", r.Queues)
	}
	if len(r.Sent) != 6 {
		t.Errorf("sent %v, want 6 messages", r.Sent)
	}
	// Two failed receives of each poison message, then it is gone; the
	// FIFO group's next message waits behind it.
	if got, want := r.Handled[r.Queues.Fifo], []string{"f-good-1#1", "f-poison#1", "f-poison#2", "f-good-2#1"}; !slices.Equal(got, want) {
		t.Errorf("FIFO consumer handled %v, want %v", got, want)
	}
	std := slices.Clone(r.Handled[r.Queues.Src])
	slices.Sort(std)
	if want := []string{"good-1#1", "good-2#1", "poison-1#1", "poison-1#2"}; !slices.Equal(std, want) {
		t.Errorf("consumer handled %v, want %v in some order", r.Handled[r.Queues.Src], want)
	}
	if r.Errors != 4 {
		t.Errorf("%d processing errors, want 4", r.Errors)
	}

	if want := []string{`{"total":150}`}; !slices.Equal(r.SNS.EU, want) || !slices.Equal(r.SNS.EURegion, []string{"eu"}) {
		t.Errorf("attribute-filtered raw delivery: %v with regions %v, want %v from eu", r.SNS.EU, r.SNS.EURegion, want)
	}
	if want := []string{`{"total":150}`, `{"total":500}`}; !slices.Equal(r.SNS.Big, want) {
		t.Errorf("body-filtered raw delivery: %v, want %v", r.SNS.Big, want)
	}
	if want := []string{`{"total":150}`, `{"total":500}`, `{"total":5}`}; !slices.Equal(r.SNS.DeadLettered, want) {
		t.Errorf("subscription dead-letter queue: %v, want the raw copies %v", r.SNS.DeadLettered, want)
	}

	c := r.CloudWatch
	if len(c.Datapoints) != 1 || c.Datapoints[0].Maximum != 1 || c.Datapoints[0].Samples != 1 {
		t.Errorf("GetMetricStatistics of the dead-letter queue's visible messages: %+v, want one sample of 1", c.Datapoints)
	}
	if c.AlarmState != "ALARM" || len(c.Notifications) != 1 {
		t.Fatalf("alarm %s with notifications %v, want ALARM and one", c.AlarmState, c.Notifications)
	}
	var env struct{ Type, Subject, Message string }
	var n alarmNotification
	if err := json.Unmarshal([]byte(c.Notifications[0]), &env); err != nil || json.Unmarshal([]byte(env.Message), &n) != nil ||
		env.Subject != `ALARM: "orders-dlq-visible" in US East (N. Virginia)` || n.NewStateValue != "ALARM" ||
		n.Trigger.MetricName != "ApproximateNumberOfMessagesVisible" {
		t.Errorf("alarm notification %s (%v)", c.Notifications[0], err)
	}

	if !slices.Equal(r.DeadLetterSources, []string{r.Queues.Src}) {
		t.Errorf("ListDeadLetterSourceQueues = %v, want %s", r.DeadLetterSources, r.Queues.Src)
	}
	// Back where they came from, as new messages.
	back := slices.Clone(r.Moved.Back)
	slices.Sort(back)
	if want := []string{"f-poison#1", "poison-1#1"}; !slices.Equal(back, want) {
		t.Errorf("redriven back: %v, want %v", r.Moved.Back, want)
	}
	for _, task := range r.Moved.Tasks {
		if task.Status != "COMPLETED" || task.ApproximateNumberOfMessagesMoved != 1 || task.ApproximateNumberOfMessagesToMove != 1 {
			t.Errorf("move task %+v", task)
		}
	}
}

func TestDeadLetterLifecycleJSSDK(t *testing.T) {
	t.Parallel()
	jsSDKTool.need(t)
	node, _ := exec.LookPath("node")
	f := start(t)
	r := driveLifecycle(t, f, startSteps(t, f, toolEnv(t), node, filepath.Join(jsSDKDir, "lifecycle.mjs")))
	checkLifecycle(t, f, r)
	if len(r.Moved.Tasks) != 2 {
		t.Errorf("move tasks %+v, want one per dead-letter queue", r.Moved.Tasks)
	}
	c := r.Cancel
	if c == nil {
		t.Fatal("no cancelled task")
	}
	if c.Running.Status != "RUNNING" || c.Running.ApproximateNumberOfMessagesMoved != 1 || c.Running.ApproximateNumberOfMessagesToMove != 3 ||
		c.Running.MaxNumberOfMessagesPerSecond != 1 || c.Running.TaskHandle != c.Handle || c.CancelledMoved != 1 {
		t.Errorf("running task %+v, cancel said %d moved", c.Running, c.CancelledMoved)
	}
	if len(c.Tasks) != 2 || c.Tasks[0].Status != "CANCELLED" || c.Tasks[1].Status != "COMPLETED" || c.Tasks[0].TaskHandle != "" {
		t.Errorf("tasks after the cancel: %+v", c.Tasks)
	}
	// What the cancelled task left stays in the dead-letter queue.
	moved := c.Tasks[0].ApproximateNumberOfMessagesMoved
	f.waitHolds(t, map[string]int64{"orders-dlq": 3 - moved, "orders": moved})
	if strings.Contains(fmt.Sprint(r.Handled), "late") {
		t.Errorf("the consumers saw messages sent after they stopped: %v", r.Handled)
	}
}

func TestDeadLetterLifecycleBoto3(t *testing.T) {
	t.Parallel()
	boto3Tool.need(t)
	f := start(t)
	r := driveLifecycle(t, f, startSteps(t, f, toolEnv(t), debianPython, filepath.Join("testdata", "boto3", "lifecycle.py")))
	checkLifecycle(t, f, r)
	// Debian's botocore has no move tasks: the program redrove by hand,
	// each message back to its DeadLetterQueueSourceArn.
	if len(r.Moved.Tasks) != 0 || r.Cancel != nil {
		t.Errorf("move tasks %+v, cancel %+v from a botocore without them", r.Moved.Tasks, r.Cancel)
	}
	f.waitHolds(t, map[string]int64{"orders-dlq": 0, "orders-dlq.fifo": 0, "orders": 0, "orders.fifo": 0})
}

// TestCeleryDeadLetter runs a Celery worker on kombu's SQS transport
// against a queue with a RedrivePolicy: a task that fails reaches the
// dead-letter queue only with late acknowledgement and no acknowledgement
// on failure; with Celery's defaults its message is deleted when the worker
// takes it.
func TestCeleryDeadLetter(t *testing.T) {
	t.Parallel()
	celeryTool.need(t)
	for _, tc := range []struct {
		mode string
		// attempts of the poison task; deadLettered: whether it moved.
		attempts     int
		deadLettered bool
	}{
		{"dead-letter", 2, true},
		{"defaults", 1, false},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Parallel()
			const visibility = 10 * time.Second
			f := start(t)
			f.createQueue(t, "tasks-dlq", nil)
			url := f.createQueue(t, "tasks", map[string]string{"RedrivePolicy": redrivePolicy("tasks-dlq", 2),
				"VisibilityTimeout": fmt.Sprint(visibility.Seconds())})
			marker := filepath.Join(t.TempDir(), "attempts")
			w := startWorker(t, f, tc.mode, url, marker)

			ran := func(want ...string) func() bool {
				return func() bool {
					b, _ := os.ReadFile(marker)
					got := strings.Fields(string(b))
					slices.Sort(got)
					return slices.Equal(got, want)
				}
			}
			// Each failed attempt leaves the message in flight until its
			// visibility timeout runs out on Ferry's clock.
			attempts := []string{"good"}
			for i := 1; i <= tc.attempts; i++ {
				attempts = append(attempts, "poison")
				w.wait(fmt.Sprintf("attempt %d of the poison task", i), ran(attempts...))
				if !tc.deadLettered {
					break
				}
				w.wait("the failed task's message in flight", func() bool {
					st := f.stats(t, "tasks")
					return st.Visible == 0 && st.NotVisible == 1
				})
				f.clk.Advance(visibility)
			}
			if tc.deadLettered {
				// The receive after maxReceiveCount moved it.
				w.wait("the poison task in the dead-letter queue", func() bool {
					return f.stats(t, "tasks-dlq").Visible == 1 && f.stats(t, "tasks").Visible+f.stats(t, "tasks").NotVisible == 0
				})
				got := f.receiveAll(t, f.srv.URL()+"/000000000000/tasks-dlq", 10)
				if len(got) != 1 || got[0].Attributes["ApproximateReceiveCount"] != "3" ||
					got[0].Attributes["DeadLetterQueueSourceArn"] != arnPrefix+"tasks" {
					t.Fatalf("dead-letter queue holds %+v", got)
				}
				return
			}
			// Acknowledged when taken: deleted before it failed, so nothing
			// is left to come back, however long the clock runs.
			w.wait("the failed task's message deleted", func() bool {
				st := f.stats(t, "tasks")
				return st.Visible+st.NotVisible+st.Delayed == 0
			})
			f.clk.Advance(2 * visibility)
			f.waitHolds(t, map[string]int64{"tasks": 0, "tasks-dlq": 0})
			if !ran("good", "poison")() {
				t.Error("the poison task ran again")
			}
		})
	}
}

// worker is a Celery worker the test runs.
type worker struct {
	t      *testing.T
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	exited chan struct{}
}

// startWorker runs testdata/celery/worker.py in mode on queue url; it is
// bound by a deadline and stopped (SIGTERM, then killed) with the test.
func startWorker(t *testing.T, f *ferry, mode, url, marker string) *worker {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, debianPython, filepath.Join("testdata", "celery", "worker.py"), mode, url, marker,
		f.srv.URL(), "us-east-1", harnessKey, harnessSecret)
	cmd.Env = toolEnv(t)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	w := &worker{t: t, cmd: cmd, stderr: &bytes.Buffer{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w.stderr, w.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("celery worker: %v", err)
	}
	go func() {
		_ = cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(func() {
		cancel()
		<-w.exited
		if t.Failed() {
			t.Logf("celery worker:\n%s", w.stderr)
		}
	})
	return w
}

// wait waits for cond, failing at once when the worker has exited.
func (w *worker) wait(what string, cond func() bool) {
	w.t.Helper()
	testwait.Eventually(w.t, what, func() bool {
		select {
		case <-w.exited:
			w.t.Fatalf("the celery worker exited before %s: %v", what, w.cmd.ProcessState)
		default:
		}
		return cond()
	})
}

// TestDeadLetterDebianAWSCLI drives the dead-letter lifecycle with the AWS
// CLI 2.9 from Debian: a consumer that gives the message back at once
// (receive-message --visibility-timeout 0) until it moves,
// list-dead-letter-source-queues, and the redrive. The CLI 2.9 predates the message move tasks
// (June 2023), so it redrives by hand as scripts of its time did; a newer
// CLI on PATH here would run start-message-move-task instead.
func TestDeadLetterDebianAWSCLI(t *testing.T) {
	t.Parallel()
	awsCLITool.need(t)
	f := start(t)
	cli := func(v any, args ...string) {
		t.Helper()
		out, stderr, err := awsCLI(t, f, append([]string{"sqs"}, args...)...)
		if err != nil {
			t.Fatalf("aws sqs %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
		if v != nil && strings.TrimSpace(out) != "" {
			if err := json.Unmarshal([]byte(out), v); err != nil {
				t.Fatalf("aws sqs %s said %q: %v", args[0], out, err)
			}
		}
	}
	type messages struct {
		Messages []struct {
			MessageId, Body, ReceiptHandle string
			Attributes                     map[string]string
		}
	}
	var dlq, src struct{ QueueUrl string }
	cli(&dlq, "create-queue", "--queue-name", "orders-dlq", "--attributes",
		`{"RedriveAllowPolicy":"{\"redrivePermission\":\"byQueue\",\"sourceQueueArns\":[\"`+arnPrefix+`orders\"]}"}`)
	cli(&src, "create-queue", "--queue-name", "orders", "--attributes",
		`{"VisibilityTimeout":"30","RedrivePolicy":"{\"deadLetterTargetArn\":\"`+arnPrefix+`orders-dlq\",\"maxReceiveCount\":2}"}`)
	var sent struct{ MessageId string }
	cli(&sent, "send-message", "--queue-url", src.QueueUrl, "--message-body", `{"order":42}`)

	// A consumer that fails twice, giving the message back each time.
	for i := 1; i <= 2; i++ {
		var got messages
		cli(&got, "receive-message", "--queue-url", src.QueueUrl, "--attribute-names", "ApproximateReceiveCount",
			"--visibility-timeout", "0")
		if len(got.Messages) != 1 || got.Messages[0].Attributes["ApproximateReceiveCount"] != fmt.Sprint(i) {
			t.Fatalf("receive %d: %+v", i, got)
		}
	}
	var none messages
	cli(&none, "receive-message", "--queue-url", src.QueueUrl)
	if len(none.Messages) != 0 {
		t.Fatalf("the third receive handed out %+v", none)
	}
	var sources struct{ QueueUrls []string }
	cli(&sources, "list-dead-letter-source-queues", "--queue-url", dlq.QueueUrl)
	if !slices.Equal(sources.QueueUrls, []string{src.QueueUrl}) {
		t.Errorf("list-dead-letter-source-queues = %v", sources.QueueUrls)
	}
	var dead messages
	cli(&dead, "receive-message", "--queue-url", dlq.QueueUrl, "--attribute-names", "All", "--visibility-timeout", "0")
	if len(dead.Messages) != 1 || dead.Messages[0].MessageId != sent.MessageId || dead.Messages[0].Body != `{"order":42}` ||
		dead.Messages[0].Attributes["DeadLetterQueueSourceArn"] != arnPrefix+"orders" || dead.Messages[0].Attributes["ApproximateReceiveCount"] != "3" {
		t.Fatalf("dead-letter queue holds %+v", dead)
	}

	out, stderr, err := awsCLI(t, f, "sqs", "start-message-move-task", "--source-arn", arnPrefix+"orders-dlq")
	switch {
	case err != nil && strings.Contains(stderr, "Invalid choice"):
		// The CLI 2.9: by hand, to the queue the message came from.
		t.Log("this AWS CLI has no start-message-move-task: redriving by hand")
		m := dead.Messages[0]
		cli(nil, "send-message", "--queue-url", src.QueueUrl, "--message-body", m.Body)
		cli(nil, "delete-message", "--queue-url", dlq.QueueUrl, "--receipt-handle", m.ReceiptHandle)
	case err != nil:
		t.Fatalf("start-message-move-task: %v\n%s", err, stderr)
	default:
		var started struct{ TaskHandle string }
		if err := json.Unmarshal([]byte(out), &started); err != nil || started.TaskHandle == "" {
			t.Fatalf("start-message-move-task said %q (%v)", out, err)
		}
		f.waitTask(t, arnPrefix+"orders-dlq", "COMPLETED")
		var tasks struct {
			Results []struct {
				Status                           string
				ApproximateNumberOfMessagesMoved int64
			}
		}
		cli(&tasks, "list-message-move-tasks", "--source-arn", arnPrefix+"orders-dlq")
		if len(tasks.Results) != 1 || tasks.Results[0].Status != "COMPLETED" || tasks.Results[0].ApproximateNumberOfMessagesMoved != 1 {
			t.Errorf("list-message-move-tasks = %+v", tasks)
		}
	}
	var back messages
	cli(&back, "receive-message", "--queue-url", src.QueueUrl, "--attribute-names", "All")
	if len(back.Messages) != 1 || back.Messages[0].Body != `{"order":42}` || back.Messages[0].MessageId == sent.MessageId ||
		back.Messages[0].Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("redriven: %+v", back)
	}
	f.waitHolds(t, map[string]int64{"orders-dlq": 0})
}
