package server

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/console"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
	"github.com/ferrymq/ferry/internal/sns/delivery"
	"github.com/ferrymq/ferry/internal/sqs"
)

// The console (package console) reaches Ferry through consoleBackend: the
// services' actions in-process, the store's Peeker through the SQS port,
// the metrics, and the failure history's rendering. It shows the home
// region's resources.

type consoleBackend struct{ s *Server }

func (s *Server) newConsole() *console.Console {
	return console.New(console.Options{
		Backend:      consoleBackend{s},
		Clock:        s.cfg.Clock,
		Logger:       s.cfg.Logger,
		Account:      s.cfg.Account,
		Region:       s.cfg.Region,
		Version:      s.cfg.Version,
		AuthRequired: s.cfg.AuthVerify,
		AdminToken:   s.cfg.AdminToken,
		HasKeys:      s.cfg.Credentials.Len() > 0,
		Done:         s.drain.Done(),
		Changes:      s.changes,
	})
}

func (b consoleBackend) Invoke(ctx context.Context, account, service, action string, in, out any) error {
	info := protocol.RequestInfo{Host: b.s.Addr(), TLS: b.s.scheme == "https", Account: account, Region: b.s.cfg.Region}
	return b.s.api.Invoke(ctx, info, service, action, in, out)
}

func (b consoleBackend) StartMoveTask(ctx context.Context, account string, in any, refs []string, out any) error {
	if len(refs) > 0 {
		ctx = sqs.WithMoveRefs(ctx, refs)
	}
	return b.Invoke(ctx, account, "sqs", "StartMessageMoveTask", in, out)
}

// Accounts are the accounts with queues in the home region, but SNS's
// own, and those of the credentials' keys.
func (b consoleBackend) Accounts(ctx context.Context) ([]string, error) {
	owners, err := b.s.store.Accounts(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{b.s.cfg.Account: true}
	for _, o := range owners {
		if account, reg := region.Split(o, b.s.cfg.Region); reg == b.s.cfg.Region && sigv4.IsAccountID(account) {
			seen[account] = true
		}
	}
	for _, a := range b.s.cfg.Credentials.Accounts() {
		seen[a] = true
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	slices.Sort(out)
	return out, nil
}

func (b consoleBackend) CheckKey(accessKey, secret string) (string, bool) {
	id, ok := b.s.cfg.Credentials.Check(accessKey, secret)
	return id.Account, ok
}

func (b consoleBackend) Queues(ctx context.Context, account string) ([]engine.Queue, error) {
	if account == delivery.QueueAccount {
		return nil, nil
	}
	return b.s.store.ListQueues(ctx, account, "")
}

func (b consoleBackend) Stats(ctx context.Context, account, name string) (engine.Stats, error) {
	return b.s.store.Stats(ctx, account, name)
}

// QueueURL is the queue's URL on the API's listener, or under
// Config.QueueURLBase.
func (b consoleBackend) QueueURL(account, name string) string {
	base := strings.TrimRight(b.s.cfg.QueueURLBase, "/")
	if base == "" {
		base = b.s.URL()
	}
	return sqs.QueueURL(base, b.s.cfg.Region, b.s.cfg.Region, account, name)
}

func (b consoleBackend) QueueARN(account, name string) string {
	return sqs.QueueARN(b.s.cfg.Region, account, name)
}

func (b consoleBackend) Datapoints(account, metric, queue string, from, to time.Time) []metrics.Datapoint {
	return b.s.metrics.Datapoints(account, metrics.NamespaceSQS, metric, metrics.Queue(queue), from, to)
}

func (b consoleBackend) Peeker() engine.Peeker { return b.s.store }

func (b consoleBackend) DeleteRefs(ctx context.Context, account, name string, refs []string) (int, error) {
	return b.s.sqs.DeleteRefs(ctx, account, name, refs)
}

func (b consoleBackend) SystemAttributes(m *engine.Message) map[string]string {
	return sqs.SystemAttributes(m)
}

func (b consoleBackend) History(h engine.MessageHistory) any {
	return render(h, b.s.cfg.Clock.Now())
}

func (b consoleBackend) SubscriptionCounters(arn string) (console.SubscriptionCounters, bool) {
	n, ok := b.s.sns.SubscriptionCounters(arn)
	if !ok {
		return console.SubscriptionCounters{}, false
	}
	out := console.SubscriptionCounters{Delivered: n.Delivered, Failed: n.Failed, DeadLettered: n.RedrivenToDLQ}
	retried, recent, _ := b.s.sns.SubscriptionFailures(arn)
	out.Retried = retried
	for _, f := range recent {
		out.RecentFailures = append(out.RecentFailures, console.DeliveryFailure{At: f.At, Status: f.Status, Error: f.Error, Endpoint: f.Endpoint})
	}
	return out, true
}
