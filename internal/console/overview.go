package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/metrics"
	"github.com/ferrymq/ferry/internal/topology"
)

// sparkMinutes is how many one-minute datapoints a sparkline shows.
const sparkMinutes = 60

// redriveView is a queue's RedrivePolicy.
type redriveView struct {
	Target          string `json:"target"`
	TargetARN       string `json:"targetArn"`
	MaxReceiveCount int    `json:"maxReceiveCount"`
}

// queueSummary is a queue as the overview lists it.
type queueSummary struct {
	Name             string       `json:"name"`
	URL              string       `json:"url"`
	ARN              string       `json:"arn"`
	FIFO             bool         `json:"fifo"`
	Visible          int64        `json:"visible"`
	InFlight         int64        `json:"inflight"`
	Delayed          int64        `json:"delayed"`
	OldestAgeSeconds *int64       `json:"oldestAgeSeconds"`
	DeadLetterQueue  bool         `json:"deadLetterQueue"`
	Sources          []string     `json:"sources"`
	Redrive          *redriveView `json:"redrive"`
	Sent             []float64    `json:"sent"`
	Depth            []*float64   `json:"depth"`
}

type overviewView struct {
	Now           string         `json:"now"`
	Account       string         `json:"account"`
	Queues        []queueSummary `json:"queues"`
	Topics        int            `json:"topics"`
	Subscriptions int            `json:"subscriptions"`
	Alarms        map[string]int `json:"alarms"`
}

// summarize is q as the overview shows it; sources are the names of the
// queues whose redrive policy targets it.
func (c *Console) summarize(ctx context.Context, account string, q *engine.Queue, sources []string, now time.Time) (queueSummary, error) {
	st, err := c.b.Stats(ctx, q.Account, q.Name)
	if err != nil {
		return queueSummary{}, fmt.Errorf("stats of %s: %w", q.Name, err)
	}
	s := queueSummary{Name: q.Name, URL: c.b.QueueURL(account, q.Name), ARN: c.b.QueueARN(account, q.Name),
		FIFO: q.Settings.FIFO, Visible: st.Visible, InFlight: st.NotVisible, Delayed: st.Delayed,
		DeadLetterQueue: len(sources) > 0, Sources: sources}
	if s.Sources == nil {
		s.Sources = []string{}
	}
	if !st.OldestAt.IsZero() {
		age := int64(metrics.AgeSeconds(st, now))
		s.OldestAgeSeconds = &age
	}
	if rd := q.Settings.Redrive; rd != nil {
		s.Redrive = &redriveView{Target: rd.TargetName, MaxReceiveCount: rd.MaxReceiveCount, TargetARN: redriveTargetARN(q)}
	}
	s.Sent, s.Depth = c.sparklines(account, q.Name, now)
	return s, nil
}

// redriveTargetARN is the deadLetterTargetArn of q's RedrivePolicy.
func redriveTargetARN(q *engine.Queue) string {
	var p struct {
		Target string `json:"deadLetterTargetArn"`
	}
	_ = json.Unmarshal([]byte(q.Attributes["RedrivePolicy"]), &p)
	return p.Target
}

// sparklines are the queue's sends per minute and its visible depth per
// minute, the last sparkMinutes minutes (the current one last, so far),
// oldest first.
func (c *Console) sparklines(account, queue string, now time.Time) (sent []float64, depth []*float64) {
	end := now.Truncate(time.Minute).Add(time.Minute)
	from := end.Add(-sparkMinutes * time.Minute)
	sent = make([]float64, sparkMinutes)
	depth = make([]*float64, sparkMinutes)
	slot := func(t time.Time) (int, bool) {
		i := int(t.Sub(from) / time.Minute)
		return i, i >= 0 && i < sparkMinutes
	}
	for _, d := range c.b.Datapoints(account, metrics.MessagesSent, queue, from, end) {
		if i, ok := slot(d.Timestamp); ok {
			sent[i] = d.Sum
		}
	}
	for _, d := range c.b.Datapoints(account, metrics.MessagesVisible, queue, from, end) {
		if i, ok := slot(d.Timestamp); ok {
			v := d.Average()
			depth[i] = &v
		}
	}
	return sent, depth
}

// deadLetterSources maps each queue's name to the names of the queues
// whose redrive policy targets it (a dead-letter queue and its sources
// are of one account), in the order of queues.
func deadLetterSources(queues []engine.Queue) map[string][]string {
	out := map[string][]string{}
	for i := range queues {
		if rd := queues[i].Settings.Redrive; rd != nil && rd.TargetAccount == queues[i].Account {
			out[rd.TargetName] = append(out[rd.TargetName], queues[i].Name)
		}
	}
	return out
}

// buildOverview reads everything the overview shows of account.
func (c *Console) buildOverview(ctx context.Context, account string) (*overviewView, error) {
	now := c.clock.Now()
	queues, err := c.b.Queues(ctx, account)
	if err != nil {
		return nil, fmt.Errorf("list queues: %w", err)
	}
	sources := deadLetterSources(queues)
	out := &overviewView{Now: timeString(now), Account: account, Queues: make([]queueSummary, 0, len(queues)),
		Alarms: map[string]int{"OK": 0, "ALARM": 0, "INSUFFICIENT_DATA": 0}}
	for i := range queues {
		s, err := c.summarize(ctx, account, &queues[i], sources[queues[i].Name], now)
		if err != nil {
			return nil, err
		}
		out.Queues = append(out.Queues, s)
	}
	topics, err := topology.TopicARNs(ctx, c.call(account))
	if err != nil {
		return nil, err
	}
	out.Topics = len(topics)
	subs, err := topology.Subscriptions(ctx, c.call(account), "")
	if err != nil {
		return nil, err
	}
	out.Subscriptions = len(subs)
	alarms, err := c.describeAlarms(ctx, account)
	if err != nil {
		return nil, err
	}
	for _, a := range alarms {
		out.Alarms[a.StateValue]++
	}
	return out, nil
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, a *access) {
	out, err := c.buildOverview(r.Context(), a.account)
	if err != nil {
		c.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// moveTaskView is a move task as ListMessageMoveTasks lists it.
type moveTaskView struct {
	TaskHandle     string `json:"taskHandle,omitempty"`
	Status         string `json:"status"`
	SourceARN      string `json:"sourceArn"`
	DestinationARN string `json:"destinationArn,omitempty"`
	MaxPerSecond   *int   `json:"maxPerSecond"`
	Moved          int64  `json:"moved"`
	ToMove         *int64 `json:"toMove"`
	Started        string `json:"started"`
	FailureReason  string `json:"failureReason,omitempty"`
}

type queueDetailView struct {
	queueSummary
	Attributes map[string]string `json:"attributes"`
	MoveTasks  []moveTaskView    `json:"moveTasks"`
}

// findQueue is account's queue called name, and the queues whose
// redrive policy targets it.
func (c *Console) findQueue(ctx context.Context, account, name string) (engine.Queue, []string, error) {
	queues, err := c.b.Queues(ctx, account)
	if err != nil {
		return engine.Queue{}, nil, fmt.Errorf("list queues: %w", err)
	}
	for i := range queues {
		if queues[i].Name == name {
			return queues[i], deadLetterSources(queues)[name], nil
		}
	}
	return engine.Queue{}, nil, notFound("queue %q does not exist in account %s", name, account)
}

// buildQueueDetail reads the queue page of account's queue name.
func (c *Console) buildQueueDetail(ctx context.Context, account, name string) (*queueDetailView, error) {
	q, sources, err := c.findQueue(ctx, account, name)
	if err != nil {
		return nil, err
	}
	sum, err := c.summarize(ctx, account, &q, sources, c.clock.Now())
	if err != nil {
		return nil, err
	}
	out := &queueDetailView{queueSummary: sum, MoveTasks: []moveTaskView{}}
	var attrs struct{ Attributes map[string]string }
	if err := c.b.Invoke(ctx, account, "sqs", "GetQueueAttributes",
		map[string]any{"QueueUrl": sum.URL, "AttributeNames": []string{"All"}}, &attrs); err != nil {
		return nil, err
	}
	out.Attributes = attrs.Attributes
	if len(sources) > 0 {
		if out.MoveTasks, err = c.moveTasks(ctx, account, sum.ARN); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// moveTasks are the source queue's move tasks, most recent first.
func (c *Console) moveTasks(ctx context.Context, account, sourceARN string) ([]moveTaskView, error) {
	var list struct {
		Results []struct {
			TaskHandle                        string
			Status                            string
			SourceArn                         string
			DestinationArn                    string
			MaxNumberOfMessagesPerSecond      *int
			ApproximateNumberOfMessagesMoved  int64
			ApproximateNumberOfMessagesToMove *int64
			StartedTimestamp                  int64
			FailureReason                     string
		}
	}
	if err := c.b.Invoke(ctx, account, "sqs", "ListMessageMoveTasks",
		map[string]any{"SourceArn": sourceARN, "MaxResults": 10}, &list); err != nil {
		return nil, err
	}
	out := make([]moveTaskView, 0, len(list.Results))
	for _, t := range list.Results {
		out = append(out, moveTaskView{TaskHandle: t.TaskHandle, Status: t.Status, SourceARN: t.SourceArn,
			DestinationARN: t.DestinationArn, MaxPerSecond: t.MaxNumberOfMessagesPerSecond,
			Moved: t.ApproximateNumberOfMessagesMoved, ToMove: t.ApproximateNumberOfMessagesToMove,
			Started: timeString(time.UnixMilli(t.StartedTimestamp)), FailureReason: t.FailureReason})
	}
	return out, nil
}

func (c *Console) queueDetail(w http.ResponseWriter, r *http.Request, a *access) {
	out, err := c.buildQueueDetail(r.Context(), a.account, r.PathValue("name"))
	if err != nil {
		c.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// Event stream cadence.
const (
	// DefaultEventCheck is how often a stream looks for changes no action
	// announces (a visibility timeout running out, a move task's
	// progress, SNS deliveries), by the wall clock: the browser's time,
	// whatever the server's clock does.
	DefaultEventCheck = time.Second
	// eventGap is the least time between two builds of one stream, so
	// that a stream follows busy queues at a bounded cost; nine times the
	// build's time when that is longer.
	eventGap  = 100 * time.Millisecond
	eventPing = 15 * time.Second
	// eventWrite is how long one event may take to reach a page.
	eventWrite = 30 * time.Second
)

// events streams the overview, and with ?queue= that queue's page, each
// when it changes: at once after an action names a queue (changes), at
// most every eventGap, and otherwise every EventCheck.
func (c *Console) events(w http.ResponseWriter, r *http.Request, a *access) {
	queue := r.URL.Query().Get("queue")
	if queue != "" {
		if _, _, err := c.findQueue(r.Context(), a.account, queue); err != nil {
			c.fail(w, r, err)
			return
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "InternalError", "streaming is not supported here")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ctx := r.Context()
	// A page that stops reading (a frozen tab, a stalled network) must
	// not hold the stream's goroutine for ever: each write has
	// eventWrite to reach the connection, or the stream ends.
	rc := http.NewResponseController(w)
	writing := func() { _ = rc.SetWriteDeadline(time.Now().Add(eventWrite)) }
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	var lastOverview, lastQueue []byte
	// send writes v unless it is what was sent last; "now" changes every
	// time and is no change of what is shown.
	send := func(event string, v any, now *string, last *[]byte) bool {
		at := *now
		*now = ""
		key, err := json.Marshal(v)
		*now = at
		if err != nil || string(key) == string(*last) {
			return err == nil
		}
		*last = key
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		return err == nil
	}
	check := func() bool {
		writing()
		ov, err := c.buildOverview(ctx, a.account)
		if err != nil {
			c.log.Debug("console: events: overview", "err", err)
			return ctx.Err() == nil
		}
		if !send("overview", ov, &ov.Now, &lastOverview) {
			return false
		}
		if queue != "" {
			d, err := c.buildQueueDetail(ctx, a.account, queue)
			var none string
			if err == nil && !send("queue", d, &none, &lastQueue) {
				return false
			}
		}
		flusher.Flush()
		return true
	}
	// A stream waits for the change after the one it last looked at: it
	// takes the wait before it looks, so that a change made while it
	// builds or pauses (eventGap) wakes it at once afterwards.
	changed := c.opts.Changes.wait()
	if !check() {
		return
	}
	tick := time.NewTicker(c.opts.EventCheck)
	defer tick.Stop()
	ping := time.NewTicker(eventPing)
	defer ping.Stop()
	gap := time.NewTimer(eventGap)
	defer gap.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Done:
			return
		case <-changed:
		case <-tick.C:
		case <-ping.C:
			writing()
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
			flusher.Flush()
			continue
		}
		changed = c.opts.Changes.wait()
		began := time.Now()
		if !check() {
			return
		}
		// However busy the server, a stream spends at most about a tenth
		// of its time building: an account of many queues waits longer.
		gap.Reset(max(eventGap, 9*time.Since(began)))
		select {
		case <-ctx.Done():
			return
		case <-c.opts.Done:
			return
		case <-gap.C:
		}
	}
}

// parseLimit reads a limit parameter: def when absent, else 1..max.
func parseLimit(v string, present bool, def, max int) (int, error) {
	if !present {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > max {
		return 0, badRequest("limit %q: want 1 to %d", v, max)
	}
	return n, nil
}
