package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// childServe, set in a child's environment, makes the test binary run
// `ferry serve` instead of the tests: the multi-node test's nodes are
// processes of their own, which it can kill.
const childServe = "FERRY_TEST_CHILD_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(childServe) != "" {
		os.Exit(run(context.Background(), []string{"serve"}, os.Getenv, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// nodeEnv is the environment of a node serving on 127.0.0.1:0 from the
// PostgreSQL schema that the test's other nodes share.
func nodeEnv(url, schema string) []string {
	return []string{"FERRY_LISTEN=127.0.0.1:0", "FERRY_POSTGRES_URL=" + url, "FERRY_POSTGRES_SCHEMA=" + schema}
}

var listeningAt = regexp.MustCompile(`ferry listening.* addr=(\S+)`)

// startNode runs `ferry serve` in a child process with env and returns it
// and its base URL; the test kills it at its end.
func startNode(t *testing.T, env []string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(env, childServe+"=1")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := listeningAt.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	return cmd, "http://" + testwait.Receive(t, "a node to start", addr)
}

// span is when a receive was asked for and when its answer came: the
// broker handed the message out in between.
type span struct{ asked, answered time.Time }

// book is the clients' ledger of one message.
type book struct {
	acked     bool      // its send was acknowledged
	receives  []span    // every receive that handed it out
	deletedAt time.Time // when a delete of it was acknowledged; zero if none
}

// ledger is the clients' books, by body, kept by every client goroutine
// of a test. A failed send is uncertain: neither lost nor owed.
type ledger struct {
	mu    sync.Mutex
	books map[string]*book
}

func newLedger() *ledger { return &ledger{books: map[string]*book{}} }

// entry is body's book; the caller holds mu.
func (l *ledger) entry(body string) *book {
	b := l.books[body]
	if b == nil {
		b = &book{}
		l.books[body] = b
	}
	return b
}

// acked records an acknowledged send.
func (l *ledger) acked(body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entry(body).acked = true
}

// received records a receive that handed body out.
func (l *ledger) received(body string, s span) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.entry(body)
	b.receives = append(b.receives, s)
}

// deleted records an acknowledged delete of body.
func (l *ledger) deleted(body string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.entry(body); b.deletedAt.IsZero() {
		b.deletedAt = time.Now()
	}
}

// allReceived reports whether every acknowledged send was received.
func (l *ledger) allReceived() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, b := range l.books {
		if b.acked && len(b.receives) == 0 {
			return false
		}
	}
	return true
}

// check reports as the test's errors every acknowledged send never
// received, every message received again after its delete was
// acknowledged, and every message handed out twice within visibility;
// it logs the tally and returns the number of acknowledged sends.
func (l *ledger) check(t *testing.T, visibility time.Duration) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var acked, lost, cameBack, twice int
	for body, b := range l.books {
		if b.acked {
			acked++
			if len(b.receives) == 0 {
				lost++
				t.Errorf("%s: acknowledged, never received", body)
			}
		}
		for i, r := range b.receives {
			if !b.deletedAt.IsZero() && r.asked.After(b.deletedAt) {
				cameBack++
				t.Errorf("%s: received again after its delete was acknowledged", body)
			}
			// Handed out at most `answered` and at least `asked`: an
			// answer sooner than the timeout after the previous ask is
			// certainly a second hand-out within it.
			if i > 0 && r.answered.Sub(b.receives[i-1].asked) < visibility {
				twice++
				t.Errorf("%s: handed out twice within %v", body, visibility)
			}
		}
	}
	t.Logf("%d sends acknowledged; lost %d, back after delete %d, twice within the timeout %d", acked, lost, cameBack, twice)
	return acked
}

// TestNodesSurviveKill runs three Ferry nodes on one PostgreSQL schema,
// producers and consumers through all of them, and SIGKILLs one mid-load.
// From the clients' ledger: nothing acknowledged was lost, no message came
// back after its delete was acknowledged, and none was handed out twice
// within its visibility timeout.
func TestNodesSurviveKill(t *testing.T) {
	url, schema := pgtest.Schema(t)
	env := nodeEnv(url, schema)
	const (
		nodes      = 3
		perSender  = 150
		visibility = 2 * time.Second
	)
	procs := make([]*exec.Cmd, nodes)
	clients := make([]*sqs.Client, nodes)
	for i := range nodes {
		var base string
		procs[i], base = startNode(t, env)
		clients[i] = sqsClient(base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(visibility.Seconds()))}})
	if err != nil {
		t.Fatal(err)
	}
	queue := created.QueueUrl

	var (
		books = newLedger()
		dead  atomic.Int32 // 1 + the killed node, 0 before the kill
		sent  atomic.Int64
	)
	// through picks the client of node i, or of the next live one.
	through := func(i int) *sqs.Client {
		if d := int(dead.Load()) - 1; d == i%nodes {
			i++
		}
		return clients[i%nodes]
	}

	var senders sync.WaitGroup
	for p := range nodes {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for k := range perSender {
				body := fmt.Sprintf("p%d-%d", p, k)
				_, err := through(p+k).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String(body)})
				if ctx.Err() != nil {
					return
				}
				sent.Add(1)
				if err == nil {
					books.acked(body)
				}
			}
		}()
	}

	// Consumers run until every acknowledged send was received and the
	// queue is empty (a delete the killed node made but could not answer
	// is a delete too), or the test's time runs out.
	done := make(chan struct{})
	var consumers sync.WaitGroup
	for c := range nodes {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for n := 0; ; n++ {
				select {
				case <-done:
					return
				default:
				}
				cl := through(c + n)
				asked := time.Now()
				out, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					continue // the killed node: the next turn goes to another
				}
				answered := time.Now()
				for _, m := range out.Messages {
					body := aws.ToString(m.Body)
					books.received(body, span{asked, answered})
					if _, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: queue, ReceiptHandle: m.ReceiptHandle}); err == nil {
						books.deleted(body)
					}
				}
			}
		}()
	}

	// The kill, a third of the way through the sends.
	testwait.Eventually(t, "a third of the sends", func() bool { return sent.Load() >= nodes*perSender/3 })
	if err := procs[nodes-1].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	dead.Store(nodes)
	senders.Wait()
	settled := func() bool { return books.allReceived() && queueEmpty(ctx, clients[0], queue) }
	testwait.Eventually(t, "every acknowledged send received and the queue empty", settled)
	close(done)
	consumers.Wait()

	acked := books.check(t, visibility)
	if acked == 0 {
		t.Fatal("no send was acknowledged")
	}
}

// queueEmpty reports whether the queue holds no message, visible, in
// flight or delayed.
func queueEmpty(ctx context.Context, c *sqs.Client, queue *string) bool {
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: queue,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameAll}})
	if err != nil {
		return false
	}
	for _, a := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		if out.Attributes[a] != "0" {
			return false
		}
	}
	return true
}
