package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// The axes of a scaling run: each grows one dimension of the broker's
// state, step by step, on a fresh durable Ferry, and measures it.
const (
	AxisQueues        = "queues"        // queues, with batch traffic spread over all of them
	AxisBacklog       = "backlog"       // messages waiting in one queue, under a steady load
	AxisPolls         = "polls"         // long polls waiting at once
	AxisSubscriptions = "subscriptions" // SQS subscriptions of one topic
)

// ScaleAxes lists the axes in the order a run measures them.
func ScaleAxes() []string { return []string{AxisQueues, AxisBacklog, AxisPolls, AxisSubscriptions} }

// DefaultScaleSteps are each axis's steps.
func DefaultScaleSteps() map[string][]int {
	return map[string][]int{
		AxisQueues:        {1, 10, 100, 1_000, 10_000},
		AxisBacklog:       {1, 1_000, 100_000, 1_000_000, 10_000_000},
		AxisPolls:         {1, 10, 100, 1_000, 10_000},
		AxisSubscriptions: {1, 10, 100, 1_000},
	}
}

// Defaults of ScaleConfig.
const (
	DefaultScaleDuration    = 5 * time.Second
	DefaultScaleConcurrency = 16
)

// ScaleConfig says how to run the broker and what to measure.
type ScaleConfig struct {
	// Binary is the ferry executable; every step runs `Binary serve` with
	// its settings in the environment (FERRY_DATA, FERRY_LISTEN, ...), and
	// Env added to this process's own.
	Binary string
	Env    []string
	// Dir holds each step's store, in a directory of its own that is
	// removed after the step; empty means the system's temporary directory.
	Dir string
	// Axes to run, in this order; empty means all (ScaleAxes).
	Axes []string
	// Steps overrides the default steps of the axes it names.
	Steps map[string][]int
	// Duration is how long each step's measured load runs.
	Duration time.Duration
	// Concurrency is the number of clients of the load (and of a fill).
	Concurrency int
	// Progress, when set, is told each step as soon as it is measured.
	Progress func(ScaleStep)
	// Log, when set, gets a line for each phase of a step (filling,
	// restarting), for a reader watching a long run.
	Log io.Writer
}

// ScaleStep is one step's figures; a figure the axis does not measure is
// nil.
type ScaleStep struct {
	Axis string `json:"axis"`
	N    int    `json:"n"`
	// Rate is the load's throughput in Unit: messages deleted per second
	// (queues, backlog), publishes per second (subscriptions).
	Rate *float64 `json:"rate,omitempty"`
	Unit string   `json:"unit,omitempty"`
	// P50ms and P99ms are the request latencies of the load, or the
	// wake-up latencies of the long polls.
	P50ms *float64 `json:"p50_ms,omitempty"`
	P99ms *float64 `json:"p99_ms,omitempty"`
	// CPUus is the broker's CPU, in microseconds, per unit of Rate.
	CPUus *float64 `json:"cpu_us,omitempty"`
	// IdleCPU is the broker's CPU, in milliseconds per second, while the
	// long polls wait and nothing else happens.
	IdleCPU *float64 `json:"idle_cpu_ms_per_s,omitempty"`
	// RSSMiB is the broker's resident memory after the load.
	RSSMiB *float64 `json:"rss_mib,omitempty"`
	// StartupMs is how long a restart on the step's data took, from the
	// process's start until /_ferry/health answered and a receive worked.
	StartupMs *float64 `json:"startup_ms,omitempty"`
	// FillSeconds is how long building the step's state took (sending the
	// backlog).
	FillSeconds *float64 `json:"fill_s,omitempty"`
	// SettleSeconds is how long the broker then took to finish the
	// compactions the fill left it and fall idle (the load starts after).
	SettleSeconds *float64 `json:"settle_s,omitempty"`
	// AttrsP99ms is the p99 latency of GetQueueAttributes (All) on the
	// loaded queue: ApproximateNumberOfMessages at depth.
	AttrsP99ms *float64 `json:"attrs_p99_ms,omitempty"`
	Requests   int64    `json:"requests"`
	Errors     int64    `json:"errors"`
	Note       string   `json:"note,omitempty"`
}

// ScaleReport is the outcome of a scaling run.
type ScaleReport struct {
	Started  time.Time   `json:"started"`
	Finished time.Time   `json:"finished"`
	Duration string      `json:"duration"`
	Clients  int         `json:"clients"`
	Machine  []string    `json:"machine"`
	Steps    []ScaleStep `json:"steps"`
}

// Failed reports whether a step had errors.
func (r *ScaleReport) Failed() bool {
	for _, s := range r.Steps {
		if s.Errors > 0 {
			return true
		}
	}
	return false
}

func (c *ScaleConfig) fill() error {
	if c.Binary == "" {
		return errors.New("bench: no ferry binary to run")
	}
	if len(c.Axes) == 0 {
		c.Axes = ScaleAxes()
	}
	for _, a := range c.Axes {
		if !slices.Contains(ScaleAxes(), a) {
			return fmt.Errorf("bench: unknown axis %q (known: %s)", a, strings.Join(ScaleAxes(), ", "))
		}
	}
	steps := DefaultScaleSteps()
	for a, s := range c.Steps {
		steps[a] = s
	}
	c.Steps = steps
	if c.Duration <= 0 {
		c.Duration = DefaultScaleDuration
	}
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultScaleConcurrency
	}
	return nil
}

// Scale runs every configured step of every axis, each on a broker of its
// own, one after the other. It returns an error for a bad config, or when
// a broker cannot be started at all; a step's failures are in its figures.
func Scale(ctx context.Context, cfg ScaleConfig) (*ScaleReport, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	if err := raiseFileLimit(); err != nil {
		return nil, err
	}
	rep := &ScaleReport{Started: time.Now().UTC(), Duration: cfg.Duration.String(), Clients: cfg.Concurrency, Machine: MachineFacts()}
	// A run cut short still says when it ended.
	defer func() {
		rep.Finished = time.Now().UTC()
		rep.Machine = append(rep.Machine, "load average at the end: "+loadAverage())
	}()
	for _, axis := range cfg.Axes {
		for _, n := range cfg.Steps[axis] {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			step, err := cfg.step(ctx, axis, n)
			if err != nil {
				return rep, err
			}
			rep.Steps = append(rep.Steps, step)
			if cfg.Progress != nil {
				cfg.Progress(step)
			}
		}
	}
	return rep, nil
}

// raiseFileLimit lifts the soft limit on open files to the hard one: ten
// thousand long polls are ten thousand connections on each side, and the
// broker inherits the limit.
func raiseFileLimit() error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("bench: read the open files limit: %w", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			return fmt.Errorf("bench: raise the open files limit: %w", err)
		}
	}
	return nil
}

// step runs one step on a fresh broker with a store of its own.
func (c *ScaleConfig) step(ctx context.Context, axis string, n int) (ScaleStep, error) {
	dir, err := os.MkdirTemp(c.Dir, "ferry-scale-")
	if err != nil {
		return ScaleStep{}, fmt.Errorf("bench: store directory: %w", err)
	}
	defer os.RemoveAll(dir)
	p, _, err := c.startFerry(ctx, dir)
	if err != nil {
		return ScaleStep{}, err
	}
	s := &scaleRun{cfg: c, proc: p, dir: dir, step: ScaleStep{Axis: axis, N: n}}
	defer func() { s.proc.stop() }() // the broker of the moment: a restart replaces it
	s.connect(n)
	switch axis {
	case AxisQueues:
		err = s.queues(ctx, n)
	case AxisBacklog:
		err = s.backlog(ctx, n)
	case AxisPolls:
		err = s.polls(ctx, n)
	case AxisSubscriptions:
		err = s.subscriptions(ctx, n)
	}
	s.step.Errors += s.e.errs.Load()
	if s.e.firstErr != "" {
		s.e.notes = append(s.e.notes, "first error: "+s.e.firstErr)
	}
	if err != nil {
		s.step.Errors++
		s.e.notes = append([]string{err.Error()}, s.e.notes...)
	}
	s.step.Note = strings.Join(s.e.notes, "; ")
	return s.step, nil
}

// scaleRun is one step: its broker, clients and figures.
type scaleRun struct {
	cfg  *ScaleConfig
	proc *ferryProc
	dir  string
	e    *env
	step ScaleStep
}

// connect makes the step's clients, with room for conns connections
// besides the load's.
func (s *scaleRun) connect(conns int) {
	cfg := Config{Endpoint: s.proc.url, Concurrency: s.cfg.Concurrency, Duration: s.cfg.Duration}
	cfg.HTTPClient = NewHTTPClient(cfg.Concurrency + conns/8)
	_ = cfg.fill() // the endpoint is ours and well formed
	sqsClient, snsClient := clients(cfg.Endpoint, cfg.HTTPClient)
	s.e = &env{cfg: cfg, sqs: sqsClient, sns: snsClient, run: newRunID()}
}

// logf tells the run's log what a long step is doing.
func (c *ScaleConfig) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// ferryProc is a broker this run started.
type ferryProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when the process has ended
	mu   sync.Mutex
	tail []string // the last lines of its log, for an error
}

var listeningAt = regexp.MustCompile(`ferry listening.* addr=(\S+)`)

// startFerry runs `ferry serve` on dir, listening on a port of loopback
// the system picks, and waits until it answers /_ferry/health; it returns
// the broker and how long it took to answer.
func (c *ScaleConfig) startFerry(ctx context.Context, dir string) (*ferryProc, time.Duration, error) {
	cmd := exec.Command(c.Binary, "serve")
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Env = append(cmd.Env, "FERRY_DATA="+dir, "FERRY_LISTEN=127.0.0.1:0", "FERRY_MAX_CONNECTIONS=-1",
		"FERRY_LOG_LEVEL=info", "FERRY_SQS_DELAY_RECENTLY_DELETED=false", "FERRY_MEMORY=false", "FERRY_POSTGRES_URL=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, 0, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("bench: start %s: %w", c.Binary, err)
	}
	p := &ferryProc{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if m := listeningAt.FindStringSubmatch(line); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
			p.mu.Lock()
			p.tail = append(p.tail, line)
			if len(p.tail) > 20 {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
		}
		_ = cmd.Wait()
		close(p.done)
	}()
	select {
	case a := <-addr:
		p.url = "http://" + a
	case <-p.done:
		return nil, 0, fmt.Errorf("bench: ferry ended before it listened: %s", p.log())
	case <-ctx.Done():
		p.stop()
		return nil, 0, ctx.Err()
	}
	if err := p.healthy(ctx); err != nil {
		p.stop()
		return nil, 0, err
	}
	return p, time.Since(start), nil
}

func (p *ferryProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// healthy waits until the broker's health check answers 200.
func (p *ferryProc) healthy(ctx context.Context) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url+"/_ferry/health", nil)
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("bench: ferry ended: %s", p.log())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop ends the broker as an operator would, with SIGTERM, and kills it
// if it has not ended within a minute.
func (p *ferryProc) stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// cpu is the CPU, in seconds, the broker has used so far.
func (p *ferryProc) cpu() (float64, error) {
	st, err := procStat(p.cmd.Process.Pid)
	if err != nil {
		return 0, err
	}
	return float64(st.utime+st.stime) / clockTicks, nil
}

// conns counts the broker's open sockets.
func (p *ferryProc) conns() (int, error) {
	dir := "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/fd"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, fmt.Errorf("bench: count the broker's sockets: %w", err)
	}
	n := 0
	for _, de := range entries {
		if target, err := os.Readlink(dir + "/" + de.Name()); err == nil && strings.HasPrefix(target, "socket:") {
			n++
		}
	}
	return n, nil
}

// rss reads the broker's resident memory from its /metrics, in MiB.
func (s *scaleRun) rss(ctx context.Context) {
	fig, err := scrape(ctx, s.e.cfg.HTTPClient, s.proc.url)
	if err != nil {
		s.e.note("RSS: %v", err)
		return
	}
	if v, ok := fig["process_resident_memory_bytes"]; ok {
		mib := v / (1 << 20)
		s.step.RSSMiB = &mib
	}
}

// cpuSince is the broker's CPU since from, in microseconds per unit over
// n units; nil when it cannot be read or n is zero.
func (s *scaleRun) cpuSince(from float64, n int64) *float64 {
	now, err := s.proc.cpu()
	if err != nil || n <= 0 {
		return nil
	}
	v := (now - from) * 1e6 / float64(n)
	return &v
}

// restart stops the broker and starts it again on the same store, and
// records how long it took until it answered its health check and a
// ReceiveMessage on url.
func (s *scaleRun) restart(ctx context.Context, url string) error {
	s.cfg.logf("  %s %d: restarting", s.step.Axis, s.step.N)
	s.proc.stop()
	s.proc = nil
	p, ready, err := s.cfg.startFerry(ctx, s.dir)
	if err != nil {
		return err
	}
	s.proc = p
	s.connect(0)
	asked := time.Now()
	if _, err := s.e.sqs.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 1}); err != nil {
		return fmt.Errorf("ReceiveMessage after a restart: %w", err)
	}
	s.step.StartupMs = ptr(ms(ready + time.Since(asked)))
	return nil
}

// MachineFacts describes the machine a run measures on.
func MachineFacts() []string {
	facts := []string{fmt.Sprintf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				facts = append(facts, "CPU: "+strings.TrimSpace(v))
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if line, _, ok := strings.Cut(string(b), "\n"); ok {
			facts = append(facts, "memory: "+strings.Join(strings.Fields(line)[1:], " "))
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		facts = append(facts, "kernel: "+strings.TrimSpace(string(b)))
	}
	facts = append(facts, "load average at the start: "+loadAverage())
	return facts
}

// loadAverage is the 1, 5 and 15 minute load averages, or "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
