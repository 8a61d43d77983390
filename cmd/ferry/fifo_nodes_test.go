package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/engine/postgres/pgtest"
	"github.com/ferrymq/ferry/internal/testwait"
)

// TestFIFOAcrossNodes runs three Ferry nodes on one PostgreSQL schema with
// a producer per message group that sends through every node in turn, and
// consumers on every node. Each group's messages must come out in the order
// they were sent, each once, and never while a message of the same group is
// held by another consumer.
func TestFIFOAcrossNodes(t *testing.T) {
	url, schema := pgtest.Schema(t)
	t.Parallel()
	env := nodeEnv(url, schema)
	const (
		nodes    = 3
		groups   = 8
		perGroup = 25
	)
	clients := make([]*sqs.Client, nodes)
	for i := range nodes {
		_, base := startNode(t, env)
		clients[i] = sqsClient(base)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	created, err := clients[0].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true", "VisibilityTimeout": "60"}})
	if err != nil {
		t.Fatal(err)
	}
	queue := created.QueueUrl

	var producers sync.WaitGroup
	for g := range groups {
		producers.Add(1)
		go func() {
			defer producers.Done()
			for k := range perGroup {
				_, err := clients[(g+k)%nodes].SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue,
					MessageBody: aws.String(fmt.Sprintf("%d/%d", g, k)), MessageGroupId: aws.String(fmt.Sprint(g))})
				if err != nil {
					t.Errorf("send %d/%d: %v", g, k, err)
					return
				}
			}
		}()
	}

	var (
		mu       sync.Mutex
		next     [groups]int // the next message each group must hand out
		holder   [groups]int // the consumer holding messages of the group, -1 for none
		held     [groups]int // how many it holds and has not asked to delete
		received int
	)
	for g := range holder {
		holder[g] = -1
	}
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
				cl := clients[(c+n)%nodes]
				out, err := cl.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("receive: %v", err)
					}
					return
				}
				var g, k int
				mu.Lock()
				for _, m := range out.Messages {
					if _, err := fmt.Sscanf(aws.ToString(m.Body), "%d/%d", &g, &k); err != nil {
						t.Errorf("body %q: %v", aws.ToString(m.Body), err)
						continue
					}
					if holder[g] != -1 && holder[g] != c && held[g] > 0 {
						t.Errorf("%d/%d handed to consumer %d while consumer %d holds %d of the group", g, k, c, holder[g], held[g])
					}
					if k != next[g] {
						t.Errorf("group %d handed out %d, want %d", g, k, next[g])
					}
					next[g] = k + 1
					holder[g] = c
					held[g]++
					received++
				}
				mu.Unlock()
				for _, m := range out.Messages {
					// No longer held once the delete is asked for: the broker
					// may hand out the next of the group from then on.
					fmt.Sscanf(aws.ToString(m.Body), "%d/%d", &g, &k)
					mu.Lock()
					held[g]--
					mu.Unlock()
					if _, err := cl.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: queue, ReceiptHandle: m.ReceiptHandle}); err != nil {
						t.Errorf("delete %s: %v", aws.ToString(m.Body), err)
					}
				}
			}
		}()
	}
	began := time.Now()
	producers.Wait()
	t.Logf("sent in %v", time.Since(began))
	testwait.Eventually(t, "every message to be received", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return received >= groups*perGroup || t.Failed()
	})
	close(done)
	t.Logf("received in %v", time.Since(began))
	consumers.Wait()
	for g := range groups {
		if next[g] != perGroup {
			t.Errorf("group %d: %d of %d handed out", g, next[g], perGroup)
		}
	}
}
