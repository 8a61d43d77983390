package server_test

import (
	"bufio"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestRestartKeepsEverything stops an on-disk Ferry cleanly and starts it
// again on the same directory.
func TestRestartKeepsEverything(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := ctxT(t)
	f := start(t, onDisk(dir))
	url := f.createQueue(t, "durable", map[string]string{"VisibilityTimeout": "120", "DelaySeconds": "3"})
	if _, err := f.json.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: aws.String(url), Tags: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for i := 0; i < 5; i++ {
		out, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(fmt.Sprint("m", i)), DelaySeconds: 0,
			MessageAttributes: map[string]types.MessageAttributeValue{"n": {DataType: aws.String("Number"), StringValue: aws.String(fmt.Sprint(i))}}})
		if err != nil {
			t.Fatal(err)
		}
		ids[aws.ToString(out.MessageId)] = fmt.Sprint("m", i)
	}
	f.clk.Advance(3 * time.Second)
	got := testwait.Some(t, "nothing arrived", func() []types.Message {
		out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 2})
		if err != nil {
			t.Fatal(err)
		}
		return out.Messages
	})
	if _, err := f.json.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: got[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	delete(ids, aws.ToString(got[0].MessageId))
	inflight := got[1:]
	stop(t, f)

	// Same directory, a clock that has moved on a little.
	f2 := start(t, onDisk(dir))
	f2.clk.Set(epoch.Add(10 * time.Second))
	waitNoDelayed(t, f2, "durable")
	attrs, err := f2.json.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if attrs.Attributes["VisibilityTimeout"] != "120" || attrs.Attributes["DelaySeconds"] != "3" ||
		attrs.Attributes["ApproximateNumberOfMessages"] != fmt.Sprint(4-len(inflight)) || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != fmt.Sprint(len(inflight)) {
		t.Errorf("attributes after restart: %v", attrs.Attributes)
	}
	tags, err := f2.json.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(url)})
	if err != nil || tags.Tags["k"] != "v" {
		t.Errorf("tags after restart: %v, %v", tags, err)
	}
	// The receipt handle issued before the restart still works.
	if len(inflight) > 0 {
		if _, err := f2.json.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url), ReceiptHandle: inflight[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
			t.Fatalf("old receipt handle: %v", err)
		}
	}
	seen := map[string]string{}
	for len(seen) < len(ids) {
		out, err := f2.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			break
		}
		for _, m := range out.Messages {
			seen[aws.ToString(m.MessageId)] = aws.ToString(m.Body)
			if aws.ToString(m.MessageAttributes["n"].StringValue) != aws.ToString(m.Body)[1:] {
				t.Errorf("attributes of %s lost: %v", aws.ToString(m.Body), m.MessageAttributes)
			}
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(ids) {
		t.Errorf("after restart:\n got %v\nwant %v", seen, ids)
	}
}

func stop(t *testing.T, f *ferry) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestShutdownAnswersLongPolls: a clean stop ends waiting receives with an
// empty answer rather than cutting the connection.
func TestShutdownAnswersLongPolls(t *testing.T) {
	t.Parallel()
	f := start(t)
	url := f.createQueue(t, "bye", nil)
	done := make(chan error, 1)
	go func() {
		out, err := f.json.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
		if err == nil && len(out.Messages) != 0 {
			err = fmt.Errorf("got %d messages", len(out.Messages))
		}
		done <- err
	}()
	f.waitPending(t, 1)
	stop(t, f)
	if err := testwait.Receive(t, "the long poll's answer", done); err != nil {
		t.Fatalf("long poll at shutdown: %v", err)
	}
}

// buildFerry builds the ferry binary into a temporary directory.
func buildFerry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ferry")
	build := exec.Command("go", "build", "-o", bin, "../../cmd/ferry")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin
}

var listening = regexp.MustCompile(`ferry listening.* addr=(\S+)`)

// runFerry starts the ferry binary on dir and returns its process and URL.
func runFerry(t *testing.T, bin, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data", dir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		defer close(addr) // the process has ended
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	a := testwait.Receive(t, "ferry to listen", addr)
	if a == "" {
		t.Fatal("ferry ended before it listened")
	}
	return cmd, "http://" + a
}

// TestKill SIGKILLs a real Ferry process, one build of it for each case.
func TestKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills a real process")
	}
	embeddedOnly(t, "the embedded store's recovery from its files (nodes on PostgreSQL are killed in cmd/ferry)")
	bin := buildFerry(t)
	t.Run("KeepsAcknowledged", func(t *testing.T) { killKeepsAcknowledged(t, bin) })
	t.Run("DuringMoves", func(t *testing.T) { killDuringMoves(t, bin) })
}

// killKeepsAcknowledged SIGKILLs a Ferry under load and checks, after a
// restart, that every acknowledged send is there unless its delete was
// acknowledged, and that no acknowledged delete came back.
func killKeepsAcknowledged(t *testing.T, bin string) {
	dir := t.TempDir()
	ctx := ctxT(t)
	cmd, base := runFerry(t, bin, dir)
	client := jsonClient(base)
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("crash"), Attributes: map[string]string{"VisibilityTimeout": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	url := created.QueueUrl

	var mu sync.Mutex
	sent := map[string]bool{}     // acknowledged sends, by body
	deleting := map[string]bool{} // deletes asked for (acknowledged or not)
	deleted := map[string]bool{}  // acknowledged deletes
	// enough is closed once a good number of operations were acknowledged.
	enough := make(chan struct{})
	var enoughOnce sync.Once
	acknowledged := func() { // under mu
		if len(sent) >= 2000 && len(deleted) >= 200 {
			enoughOnce.Do(func() { close(enough) })
		}
	}
	var seq atomic.Int64
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for p := 0; p < 4; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				var entries []types.SendMessageBatchRequestEntry
				for i := 0; i < 5; i++ {
					entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), MessageBody: aws.String(fmt.Sprint("b", seq.Add(1)))})
				}
				out, err := client.SendMessageBatch(loadCtx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: entries})
				if err != nil {
					return // the process is gone
				}
				mu.Lock()
				for _, s := range out.Successful {
					for _, e := range entries {
						if aws.ToString(e.Id) == aws.ToString(s.Id) {
							sent[aws.ToString(e.MessageBody)] = true
						}
					}
				}
				acknowledged()
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for loadCtx.Err() == nil {
			out, err := client.ReceiveMessage(loadCtx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10})
			if err != nil {
				return
			}
			for _, m := range out.Messages {
				mu.Lock()
				deleting[aws.ToString(m.Body)] = true
				mu.Unlock()
				if _, err := client.DeleteMessage(loadCtx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: m.ReceiptHandle}); err != nil {
					return
				}
				mu.Lock()
				deleted[aws.ToString(m.Body)] = true
				acknowledged()
				mu.Unlock()
			}
		}
	}()
	// Let the load run until a good number of operations were acknowledged,
	// or for 20 s on a slow machine: fewer make the check weaker, not wrong.
	waitCtx, cancelWait := context.WithTimeout(ctx, 20*time.Second)
	select {
	case <-enough:
	case <-waitCtx.Done():
	}
	cancelWait()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stopLoad()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(sent) == 0 {
		t.Fatal("no send was acknowledged before the kill")
	}

	_, base = runFerry(t, bin, dir)
	client = jsonClient(base)
	want := 0
	for b := range sent {
		if !deleting[b] {
			want++
		}
	}
	found := map[string]bool{}
	drainUntil := time.Now().Add(30 * time.Second)
	for time.Now().Before(drainUntil) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 600, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			b := aws.ToString(m.Body)
			if deleted[b] {
				t.Errorf("acknowledged delete of %s came back", b)
			}
			found[b] = true
		}
		missing := 0
		for b := range sent {
			if !deleting[b] && !found[b] {
				missing++
			}
		}
		if missing == 0 && len(out.Messages) == 0 {
			break
		}
	}
	lost := 0
	for b := range sent {
		if !deleting[b] && !found[b] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged sends lost after SIGKILL", lost, want)
	}
	t.Logf("killed after %d acknowledged sends and %d deletes; %d found after restart", len(sent), len(deleted), len(found))
}

// waitNoDelayed waits until the delays that a clock move ended have been
// applied (timers of the fake clock fire in goroutines of their own).
func waitNoDelayed(t *testing.T, f *ferry, queue string) {
	t.Helper()
	testwait.Eventually(t, "no message of "+queue+" to be delayed", func() bool {
		st, err := f.srv.Engine().Stats(context.Background(), "000000000000", queue)
		if err != nil {
			t.Fatal(err)
		}
		return st.Delayed == 0
	})
}

// killDuringMoves SIGKILLs a Ferry while receives move messages into a
// dead-letter queue and a move task moves them on to a third queue; after a
// restart every message is in exactly one of the three queues.
func killDuringMoves(t *testing.T, bin string) {
	dir := t.TempDir()
	ctx := ctxT(t)
	cmd, base := runFerry(t, bin, dir)
	client := jsonClient(base)
	mk := func(name string, attrs map[string]string) *string {
		out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return out.QueueUrl
	}
	dlq := mk("k-dlq", nil)
	// Visibility 0: a received message is visible again at once, and the
	// next receive moves it to the dead-letter queue.
	src := mk("k-src", map[string]string{"RedrivePolicy": redrivePolicy("k-dlq", 1), "VisibilityTimeout": "0"})
	dest := mk("k-dest", nil)
	const total = 3000
	for i := 0; i < total; i += 10 {
		var entries []types.SendMessageBatchRequestEntry
		for j := i; j < i+10; j++ {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", j)), MessageBody: aws.String(fmt.Sprint("m", j))})
		}
		if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: src, Entries: entries}); err != nil {
			t.Fatal(err)
		}
	}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for r := 0; r < 3; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				if _, err := client.ReceiveMessage(loadCtx, &sqs.ReceiveMessageInput{QueueUrl: src, MaxNumberOfMessages: 10}); err != nil {
					return
				}
			}
		}()
	}
	// Once some have arrived, a move task without a rate limit carries them
	// on to the third queue; the kill comes once it has moved some.
	testwait.Eventually(t, "500 messages in the dead-letter queue", func() bool {
		st, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: dlq, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(st.Attributes["ApproximateNumberOfMessages"])
		return n >= 500
	})
	if _, err := client.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String(arnPrefix + "k-dlq"), DestinationArn: aws.String(arnPrefix + "k-dest")}); err != nil {
		t.Fatal(err)
	}
	listTasks := func() []types.ListMessageMoveTasksResultEntry {
		tasks, err := client.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: aws.String(arnPrefix + "k-dlq")})
		if err != nil || len(tasks.Results) != 1 {
			t.Fatalf("tasks: %+v, %v", tasks, err)
		}
		return tasks.Results
	}
	testwait.Eventually(t, "the move task to move some", func() bool { return listTasks()[0].ApproximateNumberOfMessagesMoved > 0 })
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	stopLoad()
	wg.Wait()

	_, base = runFerry(t, bin, dir)
	client = jsonClient(base)
	// Quiesce: stop the resumed task and the redrive policy, then count.
	if task := listTasks()[0]; aws.ToString(task.Status) == "RUNNING" {
		if _, err := client.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: task.TaskHandle}); err != nil {
			t.Fatal(err)
		}
	}
	var task types.ListMessageMoveTasksResultEntry
	testwait.Eventually(t, "the move task to end", func() bool {
		task = listTasks()[0]
		st := aws.ToString(task.Status)
		return st != "RUNNING" && st != "CANCELLING"
	})
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: src, Attributes: map[string]string{"RedrivePolicy": ""}}); err != nil {
		t.Fatal(err)
	}
	where := map[string][]string{}
	counts := map[string]int{}
	for name, url := range map[string]*string{"source": src, "dead-letter": dlq, "destination": dest} {
		for {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 10, VisibilityTimeout: 600})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Messages) == 0 {
				break
			}
			for _, m := range out.Messages {
				where[aws.ToString(m.Body)] = append(where[aws.ToString(m.Body)], name)
				counts[name]++
			}
		}
	}
	wrong := 0
	for i := 0; i < total; i++ {
		if w := where[fmt.Sprint("m", i)]; len(w) != 1 {
			if wrong++; wrong <= 10 {
				t.Errorf("message m%d is in %v", i, w)
			}
		}
	}
	if len(where) != total {
		t.Errorf("%d distinct messages, want %d", len(where), total)
	}
	t.Logf("after the kill: %v; task %s moved %d of %d", counts, aws.ToString(task.Status),
		task.ApproximateNumberOfMessagesMoved, aws.ToInt64(task.ApproximateNumberOfMessagesToMove))
}
