package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// scaleFigure is one figure of an axis: a column of its table and, when
// charted, a panel of the chart.
type scaleFigure struct {
	header string
	value  func(ScaleStep) (float64, bool)
	format func(float64) string
	chart  string // the panel's label; empty: not charted
}

func figure(f func(ScaleStep) *float64) func(ScaleStep) (float64, bool) {
	return func(s ScaleStep) (float64, bool) {
		if v := f(s); v != nil {
			return *v, true
		}
		return 0, false
	}
}

// whole writes a count without decimals, with thousands separated.
func whole(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return Thousands(v)
}

func micros(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " µs" }
func mib(v float64) string    { return strconv.FormatFloat(v, 'f', 1, 64) + " MiB" }
func secs(v float64) string   { return strconv.FormatFloat(v, 'f', 2, 64) + " s" }
func perSec(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + " ms/s" }

var (
	figRate = func(unit string) scaleFigure {
		return scaleFigure{unit, figure(func(s ScaleStep) *float64 { return s.Rate }), Thousands, unit + " (higher is better)"}
	}
	figP50     = scaleFigure{"p50", figure(func(s ScaleStep) *float64 { return s.P50ms }), FormatMillis, ""}
	figRSS     = scaleFigure{"RSS", figure(func(s ScaleStep) *float64 { return s.RSSMiB }), mib, "RSS after the load, MiB"}
	figStartup = scaleFigure{"startup", figure(func(s ScaleStep) *float64 { return s.StartupMs }), FormatMillis, "startup: restart until health and a receive answer, ms"}
	figErrors  = scaleFigure{"errors", func(s ScaleStep) (float64, bool) { return float64(s.Errors), true }, whole, ""}
)

// scaleFigures are the figures of each axis, in the order of its table.
func scaleFigures(axis string) []scaleFigure {
	p99 := func(what string) scaleFigure {
		return scaleFigure{"p99", figure(func(s ScaleStep) *float64 { return s.P99ms }), FormatMillis, "p99 " + what + ", ms (lower is better)"}
	}
	cpu := func(per string) scaleFigure {
		return scaleFigure{"CPU/" + per, figure(func(s ScaleStep) *float64 { return s.CPUus }), micros, "broker CPU per " + per + ", µs (lower is better)"}
	}
	switch axis {
	case AxisQueues:
		return []scaleFigure{
			{"create", figure(func(s ScaleStep) *float64 { return s.FillSeconds }), secs, ""},
			figRate("msgs/s"), figP50, p99("request latency"), cpu("message"), figRSS, figStartup, figErrors}
	case AxisBacklog:
		return []scaleFigure{
			{"fill", figure(func(s ScaleStep) *float64 { return s.FillSeconds }), secs, ""},
			{"settle", figure(func(s ScaleStep) *float64 { return s.SettleSeconds }), secs, ""},
			figRate("msgs/s"), figP50, p99("request latency"), cpu("message"),
			{"GetQueueAttributes p99", figure(func(s ScaleStep) *float64 { return s.AttrsP99ms }), FormatMillis, ""},
			figRSS, figStartup, figErrors}
	case AxisPolls:
		return []scaleFigure{
			{"idle CPU", figure(func(s ScaleStep) *float64 { return s.IdleCPU }), perSec, "broker CPU while the polls wait, ms per second"},
			figRSS, figP50, p99("wake-up latency of a waiting poll"), figErrors}
	case AxisSubscriptions:
		return []scaleFigure{figRate("publishes/s"),
			{"copies/s", func(s ScaleStep) (float64, bool) {
				if s.Rate == nil {
					return 0, false
				}
				return *s.Rate * float64(s.N), true
			}, Thousands, ""},
			figP50, p99("publish latency"), cpu("publish"),
			{"CPU/copy", func(s ScaleStep) (float64, bool) {
				if s.CPUus == nil {
					return 0, false
				}
				return *s.CPUus / float64(s.N), true
			}, micros, "broker CPU per copy delivered, µs (lower is better)"},
			figRSS, figErrors}
	}
	return nil
}

// scaleAbout says what each axis builds and measures.
var scaleAbout = map[string]string{
	AxisQueues: "N queues are created (the time is in *create*), then every client in turn over all the queues sends a " +
		"SendMessageBatch of 10 × 256 bytes, receives up to 10 (no wait) and deletes them in a batch. *msgs/s* counts " +
		"deleted messages; p50/p99 are over every request; CPU is the broker's (user + system, from /proc) per deleted message.",
	AxisBacklog: "One queue is filled with N messages of 256 bytes by SendMessageBatch from 4 × the clients (the time is in " +
		"*fill*); once the store has finished the compactions the fill left (*settle*: until the broker " +
		"used under 5% of a core for two seconds in a row), the same batch traffic runs on top of the backlog, so every receive takes from a queue N deep. " +
		"Afterwards GetQueueAttributes (All) is timed 20 times and the broker's count must equal N + sent − deleted.",
	AxisPolls: "N clients hold ReceiveMessage (WaitTimeSeconds 20, each on its own keep-alive connection) on min(N, 100) " +
		"queues; *idle CPU* is the broker's CPU while they wait; then 200 messages are sent one at a time, 20 ms apart, " +
		"to the queues in turn, and the wake-up latency runs from the start of each SendMessage to the return of the " +
		"poll that got it (the broker wakes the poll before it answers the send, so from the acknowledgement most " +
		"would read zero).",
	AxisSubscriptions: "One topic with N SQS subscriptions (raw delivery); every client publishes 256 bytes for the " +
		"measured time. A publish is acknowledged once all its copies are stored; afterwards every queue must hold one " +
		"copy of each acknowledged publish. *copies/s* is publishes/s × N, *CPU/copy* the CPU per publish ÷ N. Each " +
		"publish writes its N copies before it is acknowledged, so its latency grows with N by design.",
}

var scaleNoun = map[string]string{AxisQueues: "queues", AxisBacklog: "messages", AxisPolls: "polls", AxisSubscriptions: "subscriptions"}

// ScalePage says what a scaling page is about.
type ScalePage struct {
	Command string // the command that reproduced the page
	Image   string // the chart's file name, beside the page
	Notes   []string
}

// scaleAxesOf lists the axes of rep's steps, in ScaleAxes' order.
func scaleAxesOf(rep *ScaleReport) []string {
	var axes []string
	for _, a := range ScaleAxes() {
		if slices.ContainsFunc(rep.Steps, func(s ScaleStep) bool { return s.Axis == a }) {
			axes = append(axes, a)
		}
	}
	return axes
}

// WriteScaleMarkdown writes the scaling curve as a page: the run's facts
// and a table per axis.
func WriteScaleMarkdown(w io.Writer, page ScalePage, rep *ScaleReport) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("# Ferry at scale\n\n")
	p("How Ferry's embedded store (on disk, every write fsynced) behaves as its state grows along four axes: ")
	p("queues, messages waiting in one queue, long polls waiting at once, and subscriptions of a topic. ")
	p("Each step starts a fresh broker on 127.0.0.1 with a store of its own, builds the step's state through ")
	p("the AWS SDK for Go v2, and measures it; the load generator runs on the same machine.\n\n")
	p("## Machine and run\n\n")
	p("- date: %s (UTC), %s\n", rep.Started.Format("2006-01-02 15:04"), rep.Finished.Sub(rep.Started).Round(1e9))
	p("- command: `%s`\n", page.Command)
	p("- measured load per step: %s, %d clients\n", rep.Duration, rep.Clients)
	for _, f := range rep.Machine {
		p("- %s\n", f)
	}
	if page.Image != "" {
		p("\n![scaling](%s)\n", page.Image)
	}
	for _, axis := range scaleAxesOf(rep) {
		figs := scaleFigures(axis)
		p("\n## %s\n\n%s\n\n", axis, scaleAbout[axis])
		p("| %s |", scaleNoun[axis])
		for _, f := range figs {
			p(" %s |", f.header)
		}
		p("\n|---:|")
		for range figs {
			p("---:|")
		}
		p("\n")
		var notes []string
		for _, s := range rep.Steps {
			if s.Axis != axis {
				continue
			}
			p("| %s |", whole(float64(s.N)))
			for _, f := range figs {
				if v, ok := f.value(s); ok {
					p(" %s |", f.format(v))
				} else {
					p(" – |")
				}
			}
			p("\n")
			if s.Note != "" {
				notes = append(notes, fmt.Sprintf("- %s %s: %s", whole(float64(s.N)), scaleNoun[axis], mdEscape(s.Note)))
			}
		}
		if len(notes) > 0 {
			p("\n%s\n", strings.Join(notes, "\n"))
		}
	}
	if len(page.Notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range page.Notes {
			p("- %s\n", n)
		}
	}
	return bw.Flush()
}

// WriteScaleSVG draws the charted figures of every axis, a panel each,
// one bar per step.
func WriteScaleSVG(w io.Writer, rep *ScaleReport) error {
	chart := barChart{heading: "Ferry at scale: one bar per step, each panel on its own scale"}
	for _, axis := range scaleAxesOf(rep) {
		for _, f := range scaleFigures(axis) {
			if f.chart == "" {
				continue
			}
			pn := barPanel{title: axis, label: f.chart}
			i := 0
			for _, s := range rep.Steps {
				if s.Axis != axis {
					continue
				}
				b := bar{label: whole(float64(s.N)) + " " + scaleNoun[axis], colour: i, missing: "no figure"}
				if v, ok := f.value(s); ok {
					b.value, b.has, b.text = v, true, f.format(v)
				}
				if s.Errors > 0 {
					b.after, b.afterColour, b.afterBold = "errors: "+strconv.FormatInt(s.Errors, 10), "#d62728", true
				}
				pn.bars = append(pn.bars, b)
				i++
			}
			chart.panels = append(chart.panels, pn)
		}
	}
	return chart.write(w)
}

// ParseScaleSteps reads steps of one axis, "AXIS=N,N,...", into steps;
// counts may use k and M (1k = 1,000, 10M = 10,000,000).
func ParseScaleSteps(spec string, steps map[string][]int) error {
	axis, list, ok := strings.Cut(spec, "=")
	if !ok || !slices.Contains(ScaleAxes(), axis) {
		return fmt.Errorf("steps %q: want AXIS=N,N,... with AXIS one of %s", spec, strings.Join(ScaleAxes(), ", "))
	}
	var ns []int
	for _, f := range strings.Split(list, ",") {
		n, err := parseCount(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("steps %q: %w", spec, err)
		}
		ns = append(ns, n)
	}
	steps[axis] = ns
	return nil
}

// parseCount reads a positive count: digits, optionally with _ between
// them, and an optional k (thousand) or M (million).
func parseCount(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"):
		mult, s = 1_000, strings.TrimSuffix(s, "k")
	case strings.HasSuffix(s, "M"):
		mult, s = 1_000_000, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
	if err != nil || n <= 0 || n > (1<<31)/mult {
		return 0, errors.New("a count must be a positive whole number, e.g. 100, 10k or 1M")
	}
	return n * mult, nil
}
