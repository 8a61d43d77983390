package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Line renders r as one line of text: status, rate, latency, counters, note.
func (r Result) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-21s %-11s", r.Name, r.Status)
	if r.Status == StatusUnsupported || r.Status == StatusError {
		b.WriteString(" " + r.Note)
		return b.String()
	}
	fmt.Fprintf(&b, " %9s %-11s", Thousands(r.Rate), r.Unit)
	if r.Latency != "" && r.P50ms != nil && r.P99ms != nil {
		fmt.Fprintf(&b, " p50 %8s  p99 %8s  (%s)", FormatMillis(*r.P50ms), FormatMillis(*r.P99ms), r.Latency)
	}
	fmt.Fprintf(&b, "  n=%d lost=%d dup=%d ooo=%d err=%d", r.Messages, r.Lost, r.Duplicated, r.OutOfOrder, r.Errors)
	if r.Unverified > 0 {
		fmt.Fprintf(&b, " unverified=%d", r.Unverified)
	}
	if r.ServerCPU != nil {
		fmt.Fprintf(&b, " cpu=%.1fµs/msg", *r.ServerCPU)
	}
	if r.ServerCPUPerRequest != nil {
		fmt.Fprintf(&b, " cpu=%.1fµs/req", *r.ServerCPUPerRequest)
	}
	if r.DBCPU != nil {
		fmt.Fprintf(&b, " db-cpu=%.1fµs/msg", *r.DBCPU)
	}
	if r.ClientCPU != nil {
		fmt.Fprintf(&b, " client-cpu=%.1fµs/msg", *r.ClientCPU)
	}
	fmt.Fprintf(&b, " requests=%d", r.Requests)
	if r.PerReceive != nil {
		fmt.Fprintf(&b, " msgs/receive=%.2f", *r.PerReceive)
	}
	if r.CommitsPerSync != nil {
		fmt.Fprintf(&b, " commits/sync=%.2f", *r.CommitsPerSync)
	}
	if r.Note != "" {
		b.WriteString("  [" + r.Note + "]")
	}
	return b.String()
}

// FormatMillis prints milliseconds with three significant digits or so.
func FormatMillis(ms float64) string {
	switch {
	case ms < 1:
		return strconv.FormatFloat(ms, 'f', 3, 64) + "ms"
	case ms < 100:
		return strconv.FormatFloat(ms, 'f', 1, 64) + "ms"
	default:
		return strconv.FormatFloat(ms, 'f', 0, 64) + "ms"
	}
}

// WriteJSON writes rep as an indented JSON document.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// Failed reports whether any scenario failed or could not run.
func (rep *Report) Failed() bool {
	for _, r := range rep.Results {
		if r.Failed() {
			return true
		}
	}
	return false
}
