package server_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/ferrymq/ferry/internal/server"
	"github.com/ferrymq/ferry/internal/testwait"
)

// httpServers are the values of Config.HTTPServer that serve plain TCP.
var httpServers = []string{server.HTTPServerFast, server.HTTPServerNet}

func withHTTPServer(v string) option { return func(c *server.Config) { c.HTTPServer = v } }

// TestAbandonedLongPollTakesNothing: a long poll whose client goes away
// stops waiting at once, on either HTTP server, so that a message sent
// afterwards goes to the next receiver rather than to nobody.
func TestAbandonedLongPollTakesNothing(t *testing.T) {
	t.Parallel()
	for _, hs := range httpServers {
		t.Run(hs, func(t *testing.T) {
			t.Parallel()
			f := start(t, withHTTPServer(hs))
			ctx := ctxT(t)
			url := f.createQueue(t, "abandoned", nil)
			pollCtx, hangUp := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				_, err := f.json.ReceiveMessage(pollCtx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
				done <- err
			}()
			f.waitPending(t, 1) // the poll waits
			hangUp()
			if err := testwait.Receive(t, "the client's end of the poll", done); err == nil {
				t.Fatal("the abandoned poll answered")
			}
			// The server's end of it stops waiting: its timer goes.
			testwait.Eventually(t, "the poll's timer stopped", func() bool { return f.clk.Pending() == f.timers })
			if _, err := f.json.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("m")}); err != nil {
				t.Fatal(err)
			}
			out, err := f.json.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url)})
			if err != nil || len(out.Messages) != 1 {
				t.Fatalf("receive after the abandoned poll: %+v, %v", out, err)
			}
		})
	}
}

// TestUnknownHTTPServerRefused: Start names the choices.
func TestUnknownHTTPServerRefused(t *testing.T) {
	t.Parallel()
	cfg := server.Config{Listen: "127.0.0.1:0", HTTPServer: "nginx"}
	cfg.Store = openStore(t, cfg, nil)
	if srv, err := server.Start(context.Background(), cfg); err == nil {
		srv.Shutdown(context.Background())
		t.Fatal("started with an unknown HTTP server")
	}
}
