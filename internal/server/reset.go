package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/ferrymq/ferry/internal/cloudwatch"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/sigv4"
	"github.com/ferrymq/ferry/internal/sns"
	"github.com/ferrymq/ferry/internal/sns/delivery"
)

// Resets, for test suites that share one broker and start each test
// afresh: moto's path, LocalStack's and Ferry's own clear the state of
// every account, or of one account or one service. State is what the
// services keep (queues and their messages, the names deleted within a
// minute, purges, move tasks, deduplication windows, topics,
// subscriptions, platform applications, SMS settings, recorded
// deliveries and logs, alarms and their history, metric datapoints of
// every region); secrets (the receipt-handle key, the SNS signing key)
// stay.
//
// The services remove what the store holds, so a restart brings nothing
// back, and other nodes on the same store hear of each removed record and
// forget it. What each node keeps for itself alone (recorded deliveries,
// delivery logs, metric series) is forgotten through a record of kind
// kindReset, whose key names the reset's scope and whose value changes at
// every reset: its news makes every other node forget its share.

// resetServices are the services a reset may name, in the order a reset
// of several clears them: SNS and CloudWatch before SQS, so that no
// delivery worker or alarm acts on a queue that is going.
var resetServices = []string{"sns", "cloudwatch", "sqs"}

// kindReset is the record that tells other nodes of a reset.
const kindReset = "ferry-reset"

// resetResult is Ferry's answer: what the reset covered and removed.
type resetResult struct {
	Account  string       `json:"account,omitempty"`
	Services []string     `json:"services"`
	Removed  resetRemoved `json:"removed"`
}

// resetRemoved counts by kind; the services' counts are inlined.
type resetRemoved struct {
	Queues int `json:"queues"`
	snsRemoved
	cloudwatchRemoved
	MetricSeries int `json:"metricSeries"`
}

type (
	snsRemoved        = sns.ResetCounts
	cloudwatchRemoved = cloudwatch.ResetCounts
)

// reset clears services' state of account ("" every account's), tells the
// other nodes, and returns what it removed.
func (s *Server) reset(ctx context.Context, account string, services []string) (resetResult, error) {
	s.resetMu.Lock()
	defer s.resetMu.Unlock()
	res := resetResult{Account: account, Services: services}
	var err error
	if slices.Contains(services, "sns") {
		if res.Removed.snsRemoved, err = s.sns.Reset(ctx, account); err != nil {
			return res, err
		}
	}
	if slices.Contains(services, "cloudwatch") {
		if res.Removed.cloudwatchRemoved, err = s.cw.Reset(ctx, account); err != nil {
			return res, err
		}
	}
	if slices.Contains(services, "sqs") {
		// Without SNS, the hidden delivery queues of its subscriptions
		// stay. An account's queues are those of every region.
		withSNS := slices.Contains(services, "sns")
		pick := func(owner string) bool {
			if account != "" {
				return s.ofAccount(owner, account)
			}
			return withSNS || owner != delivery.QueueAccount
		}
		if res.Removed.Queues, err = s.store.ResetQueues(ctx, pick); err != nil {
			return res, err
		}
	}
	// Datapoints after the queues, so that the sampler records no gauge
	// of a queue that is going once its series are gone.
	if slices.Contains(services, "cloudwatch") {
		if res.Removed.MetricSeries, err = s.metrics.Reset(ctx, s.store, s.pickAccount(account)); err != nil {
			return res, fmt.Errorf("reset metric datapoints: %w", err)
		}
	}
	if s.store.Shared() {
		if err := s.store.PutRecord(ctx, kindReset, resetKey(account, services), []byte(newResetID())); err != nil {
			return res, fmt.Errorf("tell the other nodes of the reset: %w", err)
		}
	}
	s.cfg.Logger.Info("state reset", "account", account, "services", services)
	return res, nil
}

// forgetLocal forgets what this node alone keeps of the reset's scope.
func (s *Server) forgetLocal(account string, services []string) {
	if slices.Contains(services, "sns") {
		s.sns.ForgetDeliveries(account)
	}
	if slices.Contains(services, "cloudwatch") {
		s.metrics.Forget(s.pickAccount(account))
	}
}

// pickAccount picks the owner keys of account in every region; nil, every
// owner, for account "".
func (s *Server) pickAccount(account string) func(owner string) bool {
	if account == "" {
		return nil
	}
	return func(owner string) bool { return s.ofAccount(owner, account) }
}

// ofAccount reports whether owner is a key of account, of any region.
func (s *Server) ofAccount(owner, account string) bool {
	a, _ := region.Split(owner, s.cfg.Region)
	return a == account
}

func resetKey(account string, services []string) string {
	return account + "/" + strings.Join(services, ",")
}

func parseResetKey(key string) (account string, services []string) {
	account, list, _ := strings.Cut(key, "/")
	return account, strings.Split(list, ",")
}

func newResetID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// resetNews applies other nodes' resets on a goroutine of its own, since
// news comes on the store's goroutine, which must not wait on the store.
// seen holds the value of every reset record this node has applied or
// found at its start, so that a reread after lost news applies only the
// resets it missed.
type resetNews struct {
	news *engine.RecordNews
	seen map[string]string // guarded by the goroutine
	stop context.CancelFunc
	done chan struct{}
}

// startResetNews reads the resets made so far, which this node's state
// already reflects, and starts following new ones.
func (s *Server) startResetNews(ctx context.Context) {
	n := &resetNews{news: engine.NewRecordNews(kindReset), seen: map[string]string{}, done: make(chan struct{})}
	s.resets = n
	if recs, err := s.store.Records(ctx, kindReset); err == nil {
		for _, r := range recs {
			n.seen[r.Key] = string(r.Value)
		}
	} else {
		s.cfg.Logger.Warn("read the resets of other nodes", "err", err)
	}
	bg, stop := context.WithCancel(context.Background())
	n.stop = stop
	go s.applyResets(bg)
}

func (s *Server) applyResets(ctx context.Context) {
	n := s.resets
	defer close(n.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-n.news.Wake():
		}
		b := n.news.Take()
		if err := s.applyResetBatch(ctx, b); err != nil {
			if ctx.Err() != nil {
				return
			}
			s.cfg.Logger.Warn("apply another node's reset; trying again", "err", err)
			n.news.PutBack(b)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second): // the store's time, not the broker's
			}
		}
	}
}

func (s *Server) applyResetBatch(ctx context.Context, b engine.RecordBatch) error {
	var recs []engine.Record
	if len(b.Kinds) > 0 {
		all, err := s.store.Records(ctx, kindReset)
		if err != nil {
			return err
		}
		recs = all
	} else {
		for _, r := range b.Keys {
			v, found, err := s.store.GetRecord(ctx, r.Kind, r.Key)
			if err != nil {
				return err
			}
			if found {
				recs = append(recs, engine.Record{Key: r.Key, Value: v})
			}
		}
	}
	for _, r := range recs {
		if s.resets.seen[r.Key] == string(r.Value) {
			continue
		}
		s.resets.seen[r.Key] = string(r.Value)
		account, services := parseResetKey(r.Key)
		s.forgetLocal(account, services)
	}
	return nil
}

func (n *resetNews) close() {
	n.stop()
	<-n.done
}

// Handlers of the reset paths.

// ferryReset is POST /_ferry/reset[?account=ID][&service=sqs|sns|cloudwatch].
func (s *Server) ferryReset(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	account, ok := accountParam(w, q)
	if !ok {
		return
	}
	services := resetServices
	if q.Has("service") {
		svc := q.Get("service")
		if !slices.Contains(resetServices, svc) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("service %q: want sqs, sns or cloudwatch", svc)})
			return
		}
		services = []string{svc}
	}
	res, err := s.reset(r.Context(), account, services)
	if err != nil {
		s.resetFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}

// motoReset is moto's /moto-api/reset: a POST resets everything and
// answers {"status": "ok"}; any other method answers 400 as moto does.
func (s *Server) motoReset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusBadRequest, map[string]string{"Error": "Need to POST to reset Moto"})
		return
	}
	if _, err := s.reset(r.Context(), "", resetServices); err != nil {
		s.resetFailed(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// localstackReset is LocalStack's POST /_localstack/state/reset and
// /_localstack/state/{service}/reset, answered as LocalStack answers them:
// 200 with no body, also for a service Ferry does not serve (it has no
// state to reset).
func (s *Server) localstackReset(w http.ResponseWriter, r *http.Request) {
	services := resetServices
	if svc := r.PathValue("service"); svc != "" {
		if !slices.Contains(resetServices, svc) {
			w.WriteHeader(http.StatusOK)
			return
		}
		services = []string{svc}
	}
	if _, err := s.reset(r.Context(), "", services); err != nil {
		s.resetFailed(w, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// resetFailed answers a reset the store could not complete: 503 while the
// store is unavailable or full (try again), 500 otherwise. What was
// removed before the failure stays removed; a retry removes the rest.
func (s *Server) resetFailed(w http.ResponseWriter, err error) {
	status := http.StatusInternalServerError
	if engine.Temporary(err) || errors.Is(err, engine.ErrClosed) {
		status = http.StatusServiceUnavailable
	} else {
		s.cfg.Logger.Error("state reset", "err", err)
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// accountParam is an admin path's ?account=: "" without one; a value that
// is no account id is answered 400 here, and ok is false.
func accountParam(w http.ResponseWriter, q url.Values) (account string, ok bool) {
	account = q.Get("account")
	if q.Has("account") && !sigv4.IsAccountID(account) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("account %q is not an account id (12 digits)", account)})
		return "", false
	}
	return account, true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
