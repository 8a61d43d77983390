package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// A soak drives a steady mixed load at a bounded rate for a long time and
// samples the broker's own memory figures from its Prometheus endpoint, to
// tell memory that levels off (caches, windows, a memtable filling) from
// memory that keeps growing.

// Defaults of SoakConfig.
const (
	DefaultSoakDuration = 30 * time.Minute
	DefaultSoakRate     = 500
	DefaultSoakSample   = 10 * time.Second
)

// SoakConfig says what load to offer, for how long, and how often to look.
type SoakConfig struct {
	// Endpoint is the broker's base URL; its /metrics is sampled.
	Endpoint string
	// Duration is how long the load runs.
	Duration time.Duration
	// Rate is the messages per second the producers offer in total
	// (a publish counts once, however many queues it reaches). Requests
	// are paced by tickers: a slow broker gets less, never more.
	Rate int
	// Sample is the time between two scrapes of /metrics.
	Sample time.Duration
	// Progress, when set, is told each sample as it is taken.
	Progress func(SoakSample)
	// HTTPClient overrides the client built for Endpoint (tests).
	HTTPClient *http.Client
	// Postgres, when set, has each sample read the broker's tables too.
	Postgres *PostgresWatch
	// Backlog is how many messages wait, for the whole run, in a queue
	// nobody receives from: what a consumer that fell behind leaves, and
	// the live rows PostgreSQL's autovacuum scale factor multiplies.
	Backlog int
}

// SoakSample is one scrape of the broker's figures and the load so far.
type SoakSample struct {
	Seconds   float64 `json:"t_s"`
	RSS       float64 `json:"rss_bytes"`        // process_resident_memory_bytes
	HeapInuse float64 `json:"heap_inuse_bytes"` // go_memstats_heap_inuse_bytes
	// GCGoal is the heap size at which the next collection starts: the
	// live heap marked by the last one times 1+GOGC/100, so it follows
	// the live set without the saw-tooth of garbage.
	GCGoal     float64 `json:"gc_goal_bytes"`  // go_memstats_next_gc_bytes
	GoSys      float64 `json:"go_sys_bytes"`   // go_memstats_sys_bytes: all the Go runtime holds
	Goroutines float64 `json:"goroutines"`     // go_goroutines
	Memtable   float64 `json:"memtable_bytes"` // ferry_store_memtable_size_bytes
	BlockCache float64 `json:"block_cache_bytes"`
	Stored     float64 `json:"messages_stored"` // ferry_sqs_messages_stored
	Sent       int64   `json:"sent"`            // acknowledged sends and publishes so far
	Received   int64   `json:"received"`        // distinct copies received so far
	SendRate   float64 `json:"send_rate"`       // per second since the previous sample
	RecvRate   float64 `json:"receive_rate"`
	Errors     int64   `json:"errors"`
	// Postgres is the database's part, with SoakConfig.Postgres.
	Postgres *PostgresSample `json:"postgres,omitempty"`
}

// Line renders s as one row of the soak's table.
func (s SoakSample) Line() string {
	return fmt.Sprintf("%7.0fs  rss %7s  go %7s  heap %7s  gc-goal %7s  goroutines %5.0f  memtable %7s  cache %6s  stored %6.0f  sent %6s/s  recv %6s/s  err %d",
		s.Seconds, MiB(s.RSS), MiB(s.GoSys), MiB(s.HeapInuse), MiB(s.GCGoal), s.Goroutines, MiB(s.Memtable), MiB(s.BlockCache), s.Stored,
		Thousands(s.SendRate), Thousands(s.RecvRate), s.Errors)
}

// Text renders s as its line and, with the database watched, the
// database's lines under it.
func (s SoakSample) Text() string {
	if s.Postgres == nil {
		return s.Line()
	}
	return strings.Join(append([]string{s.Line()}, s.Postgres.Lines()...), "\n")
}

// MiB prints bytes in mebibytes with one decimal.
func MiB(b float64) string { return strconv.FormatFloat(b/(1<<20), 'f', 1, 64) + "M" }

// Trend is the verdict on one figure over a soak. The samples are cut in
// three equal parts by time and each part summed up by its median (which
// garbage collection's saw-tooth and requests in flight barely move). The
// figure has levelled off (Plateau) when the last third grew over the
// middle one by at most half of what the middle grew over the first, plus
// a tolerance of 1% of the last third's median (at least 5, for the
// goroutines' jitter): a leak grows by the same amount each third, a
// filling cache or window by less and less.
type Trend struct {
	Figure  string     `json:"figure"`
	Medians [3]float64 `json:"medians"` // of the first, middle and last third
	// LastSlope is the least-squares slope of the last third, per minute.
	LastSlope float64 `json:"last_third_slope_per_min"`
	Plateau   bool    `json:"plateau"`
	Note      string  `json:"note,omitempty"`
}

// minThird is the fewest samples a third may have for a verdict.
const minThird = 3

// judge computes the trend of the values v taken at times t (seconds).
func judge(figure string, t, v []float64) Trend {
	tr := Trend{Figure: figure}
	n := len(v)
	if n < 3*minThird {
		tr.Note = fmt.Sprintf("too few samples (%d) to judge", n)
		return tr
	}
	a, b := n/3, 2*n/3
	tr.Medians = [3]float64{median(v[:a]), median(v[a:b]), median(v[b:])}
	tr.LastSlope = slope(t[b:], v[b:]) * 60
	growMiddle := tr.Medians[1] - tr.Medians[0]
	growLast := tr.Medians[2] - tr.Medians[1]
	tol := max(0.01*tr.Medians[2], 5)
	tr.Plateau = growLast <= max(growMiddle, 0)/2+tol
	return tr
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// slope is the least-squares slope of v over t.
func slope(t, v []float64) float64 {
	n := float64(len(v))
	var st, sv, stt, stv float64
	for i := range v {
		st += t[i]
		sv += v[i]
		stt += t[i] * t[i]
		stv += t[i] * v[i]
	}
	d := n*stt - st*st
	if d == 0 {
		return 0
	}
	return (n*stv - st*sv) / d
}

// SoakReport is the outcome of a soak.
type SoakReport struct {
	Endpoint string       `json:"endpoint"`
	Started  time.Time    `json:"started"`
	Duration string       `json:"duration"`
	Rate     int          `json:"rate"`
	Samples  []SoakSample `json:"samples"`
	Trends   []Trend      `json:"trends"`
	// PostgresSchema is the watched schema, HeldSnapshot whether a
	// REPEATABLE READ transaction stayed open beside the load, and
	// PostgresTrends the verdicts on each table's dead tuples and size:
	// reported, not part of Plateau (a held snapshot makes them grow).
	PostgresSchema string  `json:"postgres_schema,omitempty"`
	HeldSnapshot   bool    `json:"held_snapshot,omitempty"`
	PostgresTrends []Trend `json:"postgres_trends,omitempty"`
	// Judged says every figure had samples enough for a verdict; a soak
	// too short for one is neither levelled off nor growing.
	Judged bool `json:"judged"`
	// Plateau is the verdict: RSS, heap in use, the GC's goal and the
	// goroutines all levelled off.
	Plateau bool `json:"plateau"`
	// Result holds the correctness counters of the load: every
	// acknowledged message must arrive exactly once, FIFO groups in order.
	Result Result `json:"result"`
}

// Failed reports whether the load went wrong or memory kept growing.
func (r *SoakReport) Failed() bool { return r.Result.Failed() || r.Judged && !r.Plateau }

// Summary renders the verdicts as lines of text.
func (r *SoakReport) Summary() string {
	var b strings.Builder
	for _, tr := range slices.Concat(r.Trends, r.PostgresTrends) {
		verdict := "GROWING"
		if tr.Plateau {
			verdict = "plateau"
		}
		if tr.Note != "" {
			verdict = tr.Note
		}
		f := func(v float64) string { return trendValue(tr.Figure, v) }
		fmt.Fprintf(&b, "%-24s thirds' medians %8s %8s %8s  last third %8s/min  %s\n",
			tr.Figure, f(tr.Medians[0]), f(tr.Medians[1]), f(tr.Medians[2]), f(tr.LastSlope), verdict)
	}
	verdict := "memory levelled off"
	switch {
	case !r.Judged:
		verdict = "too few samples to judge memory"
	case !r.Plateau:
		verdict = "memory kept growing"
	}
	fmt.Fprintf(&b, "verdict: %s; load: %s", verdict, r.Result.Line())
	return b.String()
}

// WriteJSON writes r as an indented JSON document.
func (r *SoakReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// The shares of SoakConfig.Rate that each producer offers.
const (
	soakSingleShare  = 0.30 // SendMessage to the standard queue
	soakBatchShare   = 0.40 // SendMessageBatch of 10 to the standard queue
	soakFIFOShare    = 0.15 // SendMessageBatch of 10 to the FIFO queue, 20 groups
	soakDLQShare     = 0.05 // SendMessage to a queue whose messages all die
	soakPublishShare = 0.10 // Publish to a topic with 4 SQS subscriptions
	soakFIFOGroups   = 20
	// soakIdleEvery spaces the messages of the queue that long polls wait on.
	soakIdleEvery = 2 * time.Second
	// soakChurnEvery spaces the creation and deletion of a short-lived queue.
	soakChurnEvery = 10 * time.Second
	soakDrain      = 40 * time.Second
	// soakBacklogLimit bounds the filling of the backlog.
	soakBacklogLimit = 15 * time.Minute
)

// Soak runs the mixed load of cfg for its duration and samples the
// broker's memory. It returns an error only for a bad config or a broker
// that could not be set up; a load that went wrong says so in the report.
func Soak(ctx context.Context, cfg SoakConfig) (*SoakReport, error) {
	bc := Config{Endpoint: cfg.Endpoint, Duration: soakDrain / 4, Concurrency: 16, HTTPClient: cfg.HTTPClient}
	if err := bc.fill(); err != nil {
		return nil, err
	}
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultSoakDuration
	}
	if cfg.Rate <= 0 {
		cfg.Rate = DefaultSoakRate
	}
	if cfg.Sample <= 0 {
		cfg.Sample = DefaultSoakSample
	}
	sqsClient, snsClient := clients(cfg.Endpoint, bc.HTTPClient)
	e := &env{cfg: bc, sqs: sqsClient, sns: snsClient, run: newRunID(), res: Result{Name: "soak", Unit: "msgs/s"}}
	rep := &SoakReport{Endpoint: cfg.Endpoint, Started: time.Now().UTC(), Duration: cfg.Duration.String(), Rate: cfg.Rate}
	defer e.teardown()
	s, err := e.soakSetup(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: soak setup: %w", err)
	}
	if cfg.Backlog > 0 {
		if err := s.fillBacklog(ctx, cfg.Backlog); err != nil {
			return nil, fmt.Errorf("bench: soak backlog: %w", err)
		}
	}
	if cfg.Postgres != nil {
		rep.PostgresSchema, rep.HeldSnapshot = cfg.Postgres.Schema, cfg.Postgres.HoldSnapshot
		if s.pg, err = watchPostgres(ctx, *cfg.Postgres); err != nil {
			return nil, err
		}
		defer s.pg.close(context.WithoutCancel(ctx))
	}
	s.run(ctx, cfg, rep)
	e.teardown()
	rep.Result = e.settleStatus(nil)
	return rep, nil
}

// soak is the queues, topic and books of one soak.
type soak struct {
	e                         *env
	std, fifo, src, dlq, idle string
	topic                     string
	fanout                    []string
	lStd, lFIFO, lDLQ, lIdle  *Ledger
	lSNS                      *Ledger
	order                     *Order
	churned                   atomic.Int64
	pg                        *pgWatcher // nil: the database is not watched
}

func (e *env) soakSetup(ctx context.Context) (*soak, error) {
	ctx, cancel := context.WithTimeout(ctx, setupLimit)
	defer cancel()
	s := &soak{e: e, lStd: NewLedger(1), lFIFO: NewLedger(1), lDLQ: NewLedger(1), lIdle: NewLedger(1),
		lSNS: NewLedger(fanoutQueues), order: NewOrder()}
	var err error
	if s.std, err = e.createQueue(ctx, "soak", nil); err != nil {
		return nil, err
	}
	if s.fifo, err = e.createQueue(ctx, "soak.fifo", map[string]string{"FifoQueue": "true"}); err != nil {
		return nil, err
	}
	if s.dlq, err = e.createQueue(ctx, "soak-dead", nil); err != nil {
		return nil, err
	}
	dlqArn, err := e.queueArn(ctx, s.dlq)
	if err != nil {
		return nil, err
	}
	// Visibility 0 and one receive: the source's consumer never deletes,
	// so each message moves to the dead-letter queue on its second receive.
	if s.src, err = e.createQueue(ctx, "soak-source", map[string]string{
		"VisibilityTimeout": "0", "RedrivePolicy": redrivePolicy(dlqArn, 1)}); err != nil {
		return nil, err
	}
	if s.idle, err = e.createQueue(ctx, "soak-idle", nil); err != nil {
		return nil, err
	}
	if s.topic, s.fanout, err = e.fanoutTopic(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// fillBacklog fills a queue of its own with n messages that stay there
// until the queue is deleted at the end.
func (s *soak) fillBacklog(ctx context.Context, n int) error {
	e := s.e
	url, err := e.createQueue(ctx, "soak-backlog", nil)
	if err != nil {
		return err
	}
	saved := e.cfg
	defer func() { e.cfg = saved }()
	e.cfg.Prefill, e.cfg.MaxMessages, e.cfg.Duration = n, n, soakBacklogLimit
	if got := e.prefill(ctx, e.sdkQueue(url), NewLedger(1)); got < n {
		return fmt.Errorf("%d of %d messages taken", got, n)
	}
	return nil
}

// ledgers are every book of the soak, for its throughput.
func (s *soak) ledgers() []*Ledger { return []*Ledger{s.lStd, s.lFIFO, s.lDLQ, s.lIdle, s.lSNS} }

func (s *soak) counts() (sent, received int64) {
	for _, l := range s.ledgers() {
		a, r := l.Counts()
		sent += int64(a)
		received += r
	}
	return sent, received
}

// run offers the load for cfg.Duration, sampling as it goes, then lets the
// consumers drain what is left and books the outcome in e.res.
func (s *soak) run(ctx context.Context, cfg SoakConfig, rep *SoakReport) {
	e := s.e
	var crews []*crew
	crewFor := func(l *Ledger) *crew {
		c := newCrew(ctx, cfg.Duration+soakDrain, l, true)
		crews = append(crews, c)
		return c
	}
	var consumers sync.WaitGroup
	consume := func(c *crew, r receiver) { consumers.Go(func() { e.receive(c, r) }) }
	books := func(l *Ledger, copy int) func([]types.Message, time.Time) {
		return func(msgs []types.Message, _ time.Time) { e.arrive(l, copy, msgs) }
	}
	consume(crewFor(s.lStd), receiver{url: s.std, workers: 3, wait: 20, handle: books(s.lStd, 0)})
	consume(crewFor(s.lFIFO), receiver{url: s.fifo, workers: 2, wait: 20, handle: func(msgs []types.Message, _ time.Time) {
		for _, st := range e.arrive(s.lFIFO, 0, msgs) {
			s.order.Observe(st.Group, st.Index)
		}
	}})
	dlqCrew := crewFor(s.lDLQ)
	consume(dlqCrew, receiver{url: s.src, workers: 1, wait: 20, keep: true, handle: func([]types.Message, time.Time) {}})
	consume(dlqCrew, receiver{url: s.dlq, workers: 1, wait: 20, handle: books(s.lDLQ, 0)})
	consume(crewFor(s.lIdle), receiver{url: s.idle, workers: 2, wait: 20, handle: books(s.lIdle, 0)})
	snsCrew := crewFor(s.lSNS)
	for q, url := range s.fanout {
		consume(snsCrew, receiver{url: url, workers: 1, wait: 20, handle: books(s.lSNS, q)})
	}

	start := time.Now()
	lctx, stopLoad := context.WithTimeout(ctx, cfg.Duration)
	defer stopLoad()
	var producers sync.WaitGroup
	pace := func(msgsPerCall int, share float64, workers int, call func()) {
		perSecond := share * float64(cfg.Rate) / float64(msgsPerCall)
		every := time.Duration(float64(time.Second) / max(perSecond, 0.01))
		paced(lctx, &producers, every, workers, call)
	}
	pace(1, soakSingleShare, 3, func() { e.send(lctx, e.sdkQueue(s.std), s.lStd, nil) })
	pace(10, soakBatchShare, 2, func() { e.failN(e.sendBatch(lctx, e.sdkQueue(s.std), s.lStd, e.stamps(s.lStd, 10), nil)) })
	// One FIFO producer: each group's order is the order of its sends.
	next := make([]uint64, soakFIFOGroups)
	turn := 0
	pace(10, soakFIFOShare, 1, func() {
		g := turn % soakFIFOGroups
		turn++
		stamps := e.stamps(s.lFIFO, 10)
		for i := range stamps {
			stamps[i].Group = "g" + strconv.Itoa(g)
			stamps[i].Index = next[g]
			next[g]++
		}
		e.failN(e.sendBatch(lctx, e.sdkQueue(s.fifo), s.lFIFO, stamps, nil))
	})
	pace(1, soakDLQShare, 1, func() { e.send(lctx, e.sdkQueue(s.src), s.lDLQ, nil) })
	pace(1, soakPublishShare, 2, func() { s.publish(lctx) })
	paced(lctx, &producers, soakIdleEvery, 1, func() { e.send(lctx, e.sdkQueue(s.idle), s.lIdle, nil) })
	paced(lctx, &producers, soakChurnEvery, 1, func() { s.churn(lctx) })

	var prevSent, prevRecv int64
	prev := start
	sample := func() {
		now := time.Now()
		sent, recv := s.counts()
		dt := now.Sub(prev).Seconds()
		smp := SoakSample{Seconds: now.Sub(start).Seconds(), Sent: sent, Received: recv, Errors: e.errs.Load()}
		if dt > 0 && len(rep.Samples) > 0 {
			smp.SendRate, smp.RecvRate = float64(sent-prevSent)/dt, float64(recv-prevRecv)/dt
		}
		prev, prevSent, prevRecv = now, sent, recv
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		fig, err := scrape(sctx, e.cfg.HTTPClient, cfg.Endpoint)
		if err != nil {
			e.fail(fmt.Errorf("scrape /metrics: %w", err))
			return
		}
		smp.RSS, smp.HeapInuse, smp.Goroutines = fig["process_resident_memory_bytes"], fig["go_memstats_heap_inuse_bytes"], fig["go_goroutines"]
		smp.GCGoal, smp.GoSys = fig["go_memstats_next_gc_bytes"], fig["go_memstats_sys_bytes"]
		smp.Memtable, smp.BlockCache = fig["ferry_store_memtable_size_bytes"], fig["ferry_store_block_cache_size_bytes"]
		smp.Stored = fig["ferry_sqs_messages_stored"]
		if s.pg != nil {
			if smp.Postgres, err = s.pg.sample(sctx); err != nil {
				e.fail(err)
				return
			}
		}
		rep.Samples = append(rep.Samples, smp)
		if cfg.Progress != nil {
			cfg.Progress(smp)
		}
	}
	sample()
	tick := time.NewTicker(cfg.Sample)
	for lctx.Err() == nil {
		select {
		case <-lctx.Done():
		case <-tick.C:
			sample()
		}
	}
	tick.Stop()
	producers.Wait()
	if ctx.Err() == nil {
		sample()
	}
	elapsed := time.Since(start)
	for _, c := range crews {
		c.producersDone()
	}
	consumers.Wait()

	sent, _ := s.counts()
	e.measured(sent, elapsed)
	e.note("%d short-lived queues created and deleted", s.churned.Load())
	e.settle(ctx, s.lStd, s.std)
	e.settle(ctx, s.lFIFO, s.fifo)
	e.settle(ctx, s.lDLQ, s.src, s.dlq)
	e.settle(ctx, s.lIdle, s.idle)
	e.settle(ctx, s.lSNS, s.fanout...)
	e.res.OutOfOrder += s.order.OutOfOrder()

	t := make([]float64, len(rep.Samples))
	figs := map[string][]float64{}
	for i, smp := range rep.Samples {
		t[i] = smp.Seconds
		figs["rss"] = append(figs["rss"], smp.RSS)
		figs["heap"] = append(figs["heap"], smp.HeapInuse)
		figs["gc-goal"] = append(figs["gc-goal"], smp.GCGoal)
		figs["goroutines"] = append(figs["goroutines"], smp.Goroutines)
	}
	rep.Plateau, rep.Judged = true, true
	for _, f := range []string{"rss", "heap", "gc-goal", "goroutines"} {
		tr := judge(f, t, figs[f])
		rep.Trends = append(rep.Trends, tr)
		rep.Plateau = rep.Plateau && tr.Plateau
		rep.Judged = rep.Judged && tr.Note == ""
	}
	rep.PostgresTrends = pgTrends(rep.Samples)
}

// paced runs workers that share one ticker, so that call runs at most once
// per every whatever the workers' number: a slow broker gets fewer calls,
// never a burst to catch up.
func paced(ctx context.Context, wg *sync.WaitGroup, every time.Duration, workers int, call func()) {
	tick := time.NewTicker(every)
	var done sync.WaitGroup
	for w := range workers {
		done.Go(func() {
			if w == 0 && ctx.Err() == nil {
				call() // at once: rare calls happen in a short run too
			}
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					call()
				}
			}
		})
	}
	wg.Go(func() {
		done.Wait()
		tick.Stop()
	})
}

// publish publishes one message to the soak's topic.
func (s *soak) publish(ctx context.Context) {
	e := s.e
	st := e.stamps(s.lSNS, 1)[0]
	if _, err := e.sns.Publish(ctx, &sns.PublishInput{TopicArn: aws.String(s.topic), Message: aws.String(st.Body())}); err != nil {
		if ctx.Err() == nil {
			e.fail(fmt.Errorf("Publish: %w", err))
		}
		return
	}
	s.lSNS.Ack(st.Seq)
}

// churn creates a queue of its own name, sends to it and deletes it, as
// test suites and short-lived consumers do.
func (s *soak) churn(ctx context.Context) {
	e := s.e
	name := e.name("churn-" + strconv.FormatInt(s.churned.Add(1), 10))
	out, err := e.sqs.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		if ctx.Err() == nil {
			e.fail(fmt.Errorf("CreateQueue %s: %w", name, err))
		}
		return
	}
	// Deleted even when the load has just ended.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, err := e.sqs.DeleteQueue(dctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl}); err != nil {
			e.fail(fmt.Errorf("DeleteQueue %s: %w", name, err))
		}
	}()
	if _, err := e.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("churn")}); err != nil && ctx.Err() == nil {
		e.fail(fmt.Errorf("SendMessage %s: %w", name, err))
	}
}

// scrape reads the unlabelled samples of endpoint's Prometheus text
// exposition: the process's and the store's totals.
func scrape(ctx context.Context, hc *http.Client, endpoint string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(endpoint, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	return parseExposition(resp.Body)
}

// parseExposition returns each metric of a Prometheus text exposition
// ("name value" or "name{labels} value" lines) as the sum of its samples:
// a metric without labels has one, and a per-account one
// (ferry_sqs_messages_stored) adds up to the broker's figure.
func parseExposition(r io.Reader) (map[string]float64, error) {
	fig := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name, value := line, ""
		if i := strings.IndexByte(line, '{'); i >= 0 {
			j := strings.LastIndexByte(line, '}')
			if j < i {
				continue
			}
			name, value = line[:i], line[j+1:]
		} else if f := strings.Fields(line); len(f) >= 2 {
			name, value = f[0], f[1]
		}
		f := strings.Fields(value)
		if len(f) < 1 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		fig[name] += v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /metrics: %w", err)
	}
	return fig, nil
}
