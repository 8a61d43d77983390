package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestDatabaseFailover runs a Ferry node on a PostgreSQL server of the
// test's own under a steady load of sends, receives and deletes, and stops
// the server at once, as a crash or a failover does. While it is down
// every call is answered 503 ServiceUnavailable, none 500 and none later
// than the client's timeout, and health says the store is unreachable.
// Once it is started again calls succeed without a restart of Ferry, a
// long poll is woken by a send (the listening connection is back), and
// from the clients' ledger nothing acknowledged was lost and no
// acknowledged delete came back.
func TestDatabaseFailover(t *testing.T) {
	db := pgtest.StartServer(t)
	base, logs, _ := serveFromEnv(t, map[string]string{"FERRY_LISTEN": "127.0.0.1:0", "FERRY_POSTGRES_URL": db.URL})
	const (
		visibility  = 2 * time.Second
		callTimeout = 15 * time.Second // longer than a node waits for a connection
		backoff     = 50 * time.Millisecond
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	client := sqsClient(base)
	created, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"),
		Attributes: map[string]string{"VisibilityTimeout": fmt.Sprint(int(visibility.Seconds()))}})
	if err != nil {
		t.Fatal(err)
	}
	queue := created.QueueUrl
	wake, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("wake")})
	if err != nil {
		t.Fatal(err)
	}

	// call runs one request with the client's timeout and books its
	// outcome: a success, a 503, or a failure of the test.
	var succeeded, unavailable atomic.Int64
	call := func(what string, fn func(ctx context.Context) error) error {
		cctx, ccancel := context.WithTimeout(ctx, callTimeout)
		defer ccancel()
		err := fn(cctx)
		switch {
		case err == nil:
			succeeded.Add(1)
		case ctx.Err() != nil: // the test is over
		case cctx.Err() != nil:
			t.Errorf("%s: no answer within %v: %v", what, callTimeout, err)
		case serviceUnavailable(err):
			unavailable.Add(1)
		default:
			t.Errorf("%s: %v; want success or 503 ServiceUnavailable", what, err)
		}
		return err
	}
	// pause paces a client whose call failed, as an SDK's retries do.
	pause := func(stop <-chan struct{}) {
		select {
		case <-stop:
		case <-time.After(backoff):
		}
	}

	books := newLedger()
	var acked atomic.Int64
	stopSends, stopReceives := make(chan struct{}), make(chan struct{})
	var senders, consumers sync.WaitGroup
	for p := range 2 {
		senders.Add(1)
		go func() {
			defer senders.Done()
			for k := 0; ; k++ {
				select {
				case <-stopSends:
					return
				default:
				}
				body := fmt.Sprintf("p%d-%d", p, k)
				err := call("send", func(ctx context.Context) error {
					_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String(body)})
					return err
				})
				if err != nil {
					pause(stopSends)
					continue
				}
				books.acked(body)
				acked.Add(1)
			}
		}()
	}
	for range 2 {
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			for {
				select {
				case <-stopReceives:
					return
				default:
				}
				asked := time.Now()
				var out *sqs.ReceiveMessageOutput
				err := call("receive", func(ctx context.Context) (err error) {
					out, err = client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
					return err
				})
				if err != nil {
					pause(stopReceives)
					continue
				}
				answered := time.Now()
				for _, m := range out.Messages {
					body := aws.ToString(m.Body)
					books.received(body, span{asked, answered})
					err := call("delete", func(ctx context.Context) error {
						_, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: queue, ReceiptHandle: m.ReceiptHandle})
						return err
					})
					if err == nil {
						books.deleted(body)
					}
				}
			}
		}()
	}

	testwait.Eventually(t, "sends acknowledged before the database goes", func() bool { return acked.Load() >= 50 })
	db.Kill()
	killed := time.Now()
	testwait.Eventually(t, "calls answered ServiceUnavailable", func() bool { return unavailable.Load() >= 20 })
	testwait.Eventually(t, "health to say the store is unreachable", func() bool {
		return strings.Contains(health(t, base), `"store":"unreachable: `)
	})

	db.Restart()
	restarted, before := time.Now(), acked.Load()
	testwait.Eventually(t, "a send acknowledged again", func() bool { return acked.Load() > before })
	t.Logf("the database was down %v; the first send was acknowledged %v after it was back",
		restarted.Sub(killed).Round(time.Millisecond), time.Since(restarted).Round(time.Millisecond))
	testwait.Eventually(t, "sends acknowledged again", func() bool { return acked.Load() >= before+50 })
	testwait.Eventually(t, "health to say the store is back", func() bool {
		return strings.Contains(health(t, base), `"store":"ok"`)
	})
	if _, d := wakeLongPoll(ctx, t, client, wake.QueueUrl, client, wake.QueueUrl); d >= 20*time.Second {
		t.Errorf("the long poll after the outage answered after %v: not woken by the send", d)
	}

	close(stopSends)
	senders.Wait()
	testwait.Eventually(t, "every acknowledged send received and the queue empty", func() bool {
		return books.allReceived() && queueEmpty(ctx, client, queue)
	})
	close(stopReceives)
	consumers.Wait()

	books.check(t, visibility)
	t.Logf("%d calls succeeded, %d answered ServiceUnavailable", succeeded.Load(), unavailable.Load())
	for line, want := range map[string]int{
		"the database cannot be reached":    1,
		"the database can be reached again": 1,
	} {
		if n := strings.Count(logs.String(), line); n != want {
			t.Errorf("the log says %q %d times, want %d:\n%s", line, n, want, logs.String())
		}
	}
}

// serviceUnavailable reports whether err is AWS's 503 ServiceUnavailable.
func serviceUnavailable(err error) bool {
	var re *awshttp.ResponseError
	var ae smithy.APIError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusServiceUnavailable &&
		errors.As(err, &ae) && strings.HasPrefix(ae.ErrorCode(), "ServiceUnavailable")
}

// health is the body of the node's health endpoint.
func health(t *testing.T, base string) string {
	t.Helper()
	resp, err := http.Get(base + "/_ferry/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
