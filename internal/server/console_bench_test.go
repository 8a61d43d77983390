package server_test

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// fillQueue sends n messages of benchBody to queue in batches of 10 from
// 16 clients at once; every 1,000th body starts with "needle".
func fillQueue(b testing.TB, client *sqs.Client, queue string, n int) {
	b.Helper()
	batches := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := range batches {
				entries := batchEntries(benchBody())
				for i := range entries {
					if (first+i)%1000 == 0 {
						entries[i].MessageBody = aws.String("needle " + benchBody())
					}
				}
				if _, err := client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for first := 0; first < n; first += 10 {
		batches <- first
	}
	close(batches)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
}

// timeConsole measures one console call, b.N times.
func timeConsole(b *testing.B, c *consoleClient, path string) {
	b.Helper()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if status, body := c.do("GET", path, nil, nil); status != 200 {
			b.Fatalf("%s: %d %s", path, status, body)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/call")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkConsole times the console's reads on the durable embedded store:
// with 100,000 messages in one queue, the overview, the first page of
// messages, a page 90,000 messages deep (by its cursor) and a filtered page;
// and the overview of 1,000 queues.
func BenchmarkConsole(b *testing.B) {
	b.Run("deep-queue", func(b *testing.B) {
		f := start(b, onDisk(b.TempDir()), realClock)
		queue := f.createQueue(b, "deep", nil)
		client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(f.srv.URL()),
			Credentials: credentials.NewStaticCredentialsProvider(harnessKey, harnessSecret, ""), RetryMaxAttempts: 1,
			HTTPClient: benchHTTPClient(b)})
		const n = 100_000
		t0 := time.Now()
		fillQueue(b, client, queue, n)
		b.Logf("filled %d messages in %v", n, time.Since(t0))
		if st, err := f.srv.Engine().Stats(context.Background(), "000000000000", "deep"); err != nil || st.Visible != n {
			b.Fatalf("the queue holds %d messages (%v), want %d", st.Visible, err, n)
		}
		c := newConsoleClient(b, f.srv.URL())
		// The cursor of the page 90,000 messages deep.
		deep := ""
		var page consolePage
		for walked := 0; walked < 90_000; walked += len(page.Messages) {
			path := "/console/api/queues/deep/messages?limit=100"
			if deep != "" {
				path += "&after=" + url.QueryEscape(deep)
			}
			c.call("GET", path, nil, 200, &page)
			deep = page.Next
		}
		b.Run("overview", func(b *testing.B) { timeConsole(b, c, "/console/api/overview") })
		b.Run("first-page", func(b *testing.B) { timeConsole(b, c, "/console/api/queues/deep/messages?limit=50") })
		b.Run("deep-page", func(b *testing.B) {
			timeConsole(b, c, "/console/api/queues/deep/messages?limit=50&after="+url.QueryEscape(deep))
		})
		b.Run("filtered-page", func(b *testing.B) { timeConsole(b, c, "/console/api/queues/deep/messages?limit=50&body=needle") })
		b.Run("queue-detail", func(b *testing.B) { timeConsole(b, c, "/console/api/queues/deep") })
	})
	b.Run("1000-queues", func(b *testing.B) {
		f := start(b, onDisk(b.TempDir()), realClock)
		ctx := context.Background()
		for i := range 1000 {
			q := f.createQueue(b, fmt.Sprintf("q%04d", i), nil)
			if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: aws.String("m")}); err != nil {
				b.Fatal(err)
			}
		}
		c := newConsoleClient(b, f.srv.URL())
		b.Run("overview", func(b *testing.B) { timeConsole(b, c, "/console/api/overview") })
	})
}
