package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	snssdk "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	awsv1 "github.com/aws/aws-sdk-go/aws"
	sqsv1 "github.com/aws/aws-sdk-go/service/sqs"

	"github.com/ferrymq/ferry/internal/bench"
	"github.com/ferrymq/ferry/internal/bench/ceiling"
	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/server"
)

// realClock runs the server on the wall clock, as in production.
func realClock(c *server.Config) { c.Clock = clock.Real{} }

// benchParallelism × GOMAXPROCS clients run at once in each benchmark.
const benchParallelism = 8

// benchBody is the body of every message the server benchmarks send.
func benchBody() string { return strings.Repeat("x", 256) }

// A benchmark's target: Ferry on its durable store (fsync on every
// acknowledged write, the figure the performance targets name), Ferry in
// memory, where no disk wait hides the CPU cost of HTTP, codecs, service
// and SDK client, or the floor (the ceiling fixture of package ceiling,
// as ferry bench calls it), which does no broker work and so shows
// what the SDK client, net/http and loopback TCP cost on their own.
const (
	targetDisk   = "disk"
	targetMemory = "memory"
	targetFloor  = "floor"
)

// startCeiling serves the floor, the benchmarks' ceiling fixture, on
// 127.0.0.1:0 until b ends, and returns its URL.
func startCeiling(b *testing.B) string {
	srv, err := ceiling.Start("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			b.Errorf("floor: %v", err)
		}
	})
	return srv.URL()
}

// runTargets runs bench as a sub-benchmark for each target.
func runTargets(b *testing.B, bench func(b *testing.B, target string)) {
	for _, target := range []string{targetDisk, targetMemory, targetFloor} {
		b.Run(target, func(b *testing.B) { bench(b, target) })
	}
}

// benchEndpoint starts target and returns its URL, and the Ferry if it
// is one.
func benchEndpoint(b *testing.B, target string) (string, *ferry) {
	switch target {
	case targetFloor:
		return startCeiling(b), nil
	case targetMemory:
		f := start(b, realClock)
		return f.srv.URL(), f
	default:
		f := start(b, onDisk(b.TempDir()), realClock)
		return f.srv.URL(), f
	}
}

// benchHTTPClient keeps all its connections alive, as ferry bench keeps
// them: http.DefaultTransport keeps two per host, so most requests of 16
// clients would pay a TCP handshake and measure that instead.
func benchHTTPClient(b *testing.B) *http.Client {
	hc := bench.NewHTTPClient(benchParallelism * 2)
	b.Cleanup(hc.CloseIdleConnections)
	return hc
}

// benchServer starts target with a queue and returns its endpoint, a
// JSON client and the queue's URL.
func benchServer(b *testing.B, target string) (string, *sqs.Client, string) {
	endpoint, f := benchEndpoint(b, target)
	url := endpoint + "/000000000000/bench"
	if f != nil {
		url = f.createQueue(b, "bench", nil)
	}
	client := sqs.New(sqs.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       benchHTTPClient(b),
	})
	return endpoint, client, url
}

// cpuMeter reports the process's CPU time (user and system, server and
// SDK clients together) per message: unlike msgs/s it does not move with
// the disk's fsync latency or with other load on the machine.
type cpuMeter struct{ start time.Duration }

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU(b *testing.B) cpuMeter { return cpuMeter{cpuTime(b)} }

func (m cpuMeter) report(b *testing.B, msgs int64) {
	if msgs > 0 {
		b.ReportMetric(float64((cpuTime(b)-m.start).Microseconds())/float64(msgs), "cpu-µs/msg")
	}
}

func batchEntries(body string) []types.SendMessageBatchRequestEntry {
	entries := make([]types.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), MessageBody: aws.String(body)}
	}
	return entries
}

// parallelSends runs send from benchParallelism× GOMAXPROCS clients, b.N
// times in all, and reports msgs/s and CPU per message for perOp messages
// a call.
func parallelSends(b *testing.B, perOp int, send func() error) {
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	cpu := startCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := send(); err != nil {
				b.Error(err)
				return
			}
		}
	})
	msgs := int64(b.N * perOp)
	b.ReportMetric(float64(msgs)/time.Since(start).Seconds(), "msgs/s")
	cpu.report(b, msgs)
}

// benchSendMessageBatch sends batches of 10 × 256 bytes over the JSON
// protocol from 16 concurrent clients.
func benchSendMessageBatch(b *testing.B, target string) {
	_, client, url := benchServer(b, target)
	entries := batchEntries(benchBody())
	parallelSends(b, 10, func() error {
		_, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
		return err
	})
}

// benchSendMessage sends one 256-byte message per request.
func benchSendMessage(b *testing.B, target string) {
	_, client, url := benchServer(b, target)
	body := aws.String(benchBody())
	parallelSends(b, 1, func() error {
		_, err := client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: body})
		return err
	})
}

// fill sends b.N batches of 10 messages to url from 16 clients.
func fill(b *testing.B, client *sqs.Client, url string) {
	entries := batchEntries(benchBody())
	ctx := context.Background()
	var filled sync.WaitGroup
	var fillErr atomic.Value
	next := atomic.Int64{}
	for range 16 {
		filled.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if _, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries}); err != nil {
					fillErr.Store(err)
					return
				}
			}
		})
	}
	filled.Wait()
	if err := fillErr.Load(); err != nil {
		b.Fatal(err)
	}
}

// benchReceiveDeleteBatch drains a queue pre-filled with b.N × 10
// messages: each op is a ReceiveMessage of 10 and a DeleteMessageBatch of
// what it got, from 16 clients. Every message must come exactly once.
// The floor holds nothing and answers every receive with 10 messages.
func benchReceiveDeleteBatch(b *testing.B, target string) {
	_, client, url := benchServer(b, target)
	ctx := context.Background()
	if target != targetFloor {
		fill(b, client, url)
	}
	var got atomic.Int64
	b.SetParallelism(benchParallelism)
	b.ResetTimer()
	cpu := startCPU(b)
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		del := make([]types.DeleteMessageBatchRequestEntry, 10)
		for i := range del {
			del[i].Id = aws.String(fmt.Sprint(i))
		}
		for pb.Next() {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
			if err != nil {
				b.Error(err)
				return
			}
			if len(out.Messages) == 0 {
				continue
			}
			for i, m := range out.Messages {
				del[i].ReceiptHandle = m.ReceiptHandle
			}
			dout, err := client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del[:len(out.Messages)]})
			if err != nil {
				b.Error(err)
				return
			}
			if len(dout.Failed) > 0 {
				b.Errorf("DeleteMessageBatch failed: %s", aws.ToString(dout.Failed[0].Message))
				return
			}
			got.Add(int64(len(out.Messages)))
		}
	})
	b.ReportMetric(float64(got.Load())/time.Since(start).Seconds(), "msgs/s")
	cpu.report(b, got.Load())
}

// benchSendMessageBatchQuery is BenchmarkSendMessageBatch over the
// query protocol (form in, XML out) with aws-sdk-go v1.
func benchSendMessageBatchQuery(b *testing.B, target string) {
	endpoint, _, url := benchServer(b, target)
	// aws-sdk-go v1 wants a bare *http.Transport (it has no body race to avoid).
	tr := &http.Transport{MaxIdleConnsPerHost: 4 * benchParallelism}
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	client := sqsv1.New(v1Session(endpoint, hc))
	body := benchBody()
	entries := make([]*sqsv1.SendMessageBatchRequestEntry, 10)
	for i := range entries {
		entries[i] = &sqsv1.SendMessageBatchRequestEntry{Id: awsv1.String(fmt.Sprint(i)), MessageBody: awsv1.String(body)}
	}
	parallelSends(b, 10, func() error {
		_, err := client.SendMessageBatchWithContext(context.Background(), &sqsv1.SendMessageBatchInput{QueueUrl: awsv1.String(url), Entries: entries})
		return err
	})
}

// benchPublish publishes 256-byte messages over the query protocol
// (aws-sdk-go-v2's SNS client) from 16 clients to a topic with 4 SQS
// subscriptions with raw delivery; a message is one Publish, four copies.
// On Ferry every copy must have landed in its queue.
func benchPublish(b *testing.B, target string) {
	endpoint, f := benchEndpoint(b, target)
	topic := "arn:aws:sns:us-east-1:000000000000:bench"
	var queues []string
	if f != nil {
		topic = f.createTopic(b, "bench", nil)
		for i := range 4 {
			name := fmt.Sprint("bench-", i)
			queues = append(queues, f.createQueue(b, name, nil))
			f.subscribe(b, topic, "sqs", "arn:aws:sqs:us-east-1:000000000000:"+name, map[string]string{"RawMessageDelivery": "true"})
		}
	}
	client := snssdk.New(snssdk.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDFERRYTEST", "secret", ""),
		RetryMaxAttempts: 1,
		HTTPClient:       benchHTTPClient(b),
	})
	in := &snssdk.PublishInput{TopicArn: aws.String(topic), Message: aws.String(benchBody())}
	parallelSends(b, 1, func() error {
		_, err := client.Publish(context.Background(), in)
		return err
	})
	b.StopTimer()
	for _, q := range queues {
		out, err := f.json.GetQueueAttributes(ctxT(b), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q),
			AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
		if err != nil {
			b.Fatal(err)
		}
		if n := out.Attributes["ApproximateNumberOfMessages"]; n != fmt.Sprint(b.N) {
			b.Errorf("%s holds %s copies of %d publishes", q, n, b.N)
		}
	}
}

// The benchmarks compare Ferry with the floor (see runTargets) in one run:
//
//	go test -run '^$' -bench 'SendMessage$|SendMessageBatch$|ReceiveDeleteBatch$|Publish$' -benchmem ./internal/server/
func BenchmarkSendMessageBatch(b *testing.B) { runTargets(b, benchSendMessageBatch) }

func BenchmarkSendMessage(b *testing.B) { runTargets(b, benchSendMessage) }

func BenchmarkReceiveDeleteBatch(b *testing.B) { runTargets(b, benchReceiveDeleteBatch) }

func BenchmarkPublish(b *testing.B) { runTargets(b, benchPublish) }

// BenchmarkSendMessageBatchQuery has no floor: the floor answers the
// JSON protocol only.
func BenchmarkSendMessageBatchQuery(b *testing.B) {
	b.Run(targetDisk, func(b *testing.B) { benchSendMessageBatchQuery(b, targetDisk) })
	b.Run(targetMemory, func(b *testing.B) { benchSendMessageBatchQuery(b, targetMemory) })
}

// BenchmarkStartup measures an on-disk start to the first answered request
// with an empty store.
func BenchmarkStartup(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		dir := b.TempDir()
		t0 := time.Now()
		cfg := server.Config{Listen: "127.0.0.1:0", DataDir: dir, Logger: testLogger(b)}
		cfg.Store = openStore(b, cfg, nil)
		srv, err := server.Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := jsonClient(srv.URL()).ListQueues(context.Background(), &sqs.ListQueuesInput{}); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t0)
		srv.Shutdown(context.Background())
	}
	b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/start")
}
