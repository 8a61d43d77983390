package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/bench"
)

func TestScaleFlags(t *testing.T) {
	noEnv := func(string) string { return "" }
	cases := []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"scale", "-h"}, 0, "queues, backlog, polls, subscriptions"},
		{[]string{"scale", "--steps", "backlog=1,x"}, 2, "positive whole number"},
		{[]string{"scale", "--steps", "topics=1"}, 2, "want AXIS=N"},
		{[]string{"scale", "--axes", "topics", "--ferry", "/nonexistent"}, 2, `unknown axis "topics"`},
		{[]string{"scale", "--duration", "0s"}, 2, "must be positive"},
		{[]string{"scale", "extra"}, 2, "unexpected argument"},
		{[]string{"scale", "--render", "/nonexistent/scaling.json"}, 1, "no such file"},
		{[]string{"scale", "--axes", "polls", "--steps", "polls=1", "--ferry", "/nonexistent/ferry"}, 2, "start /nonexistent/ferry"},
		{[]string{"help", "scale"}, 0, "-steps value"},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, noEnv, &out, &errOut)
		if code != tc.code || !strings.Contains(out.String()+errOut.String(), tc.out) {
			t.Errorf("%v: code %d, output %q%q", tc.args, code, out.String(), errOut.String())
		}
	}
}

// TestScaleAgainstFerry runs two small steps of every axis, each on a
// broker of its own (this test binary running `ferry serve`), requires
// every step to come out without errors and with its figures, and then
// writes the page again from the raw report. Speed is never asserted.
func TestScaleAgainstFerry(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight brokers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := bench.ScaleConfig{
		Binary: os.Args[0], Env: []string{childServe + "=1"}, Dir: t.TempDir(),
		Duration: 200 * time.Millisecond, Concurrency: 4,
		Steps: map[string][]int{bench.AxisQueues: {1, 20}, bench.AxisBacklog: {1, 2000}, bench.AxisPolls: {1, 50}, bench.AxisSubscriptions: {1, 3}},
	}
	rep, err := bench.Scale(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Steps) != 8 {
		t.Fatalf("%d steps, want 8", len(rep.Steps))
	}
	// Every broker has been stopped, those a restart replaced and those
	// that replaced them.
	if kids := children(t); len(kids) > 0 {
		t.Errorf("brokers still running: %v", kids)
	}
	for _, s := range rep.Steps {
		if s.Errors > 0 {
			t.Errorf("%s %d: %d errors: %s", s.Axis, s.N, s.Errors, s.Note)
		}
		need := map[string]bool{
			"rate":    s.Axis != bench.AxisPolls,
			"cpu":     s.Axis != bench.AxisPolls,
			"startup": s.Axis == bench.AxisQueues || s.Axis == bench.AxisBacklog,
			"idle":    s.Axis == bench.AxisPolls,
			"attrs":   s.Axis == bench.AxisBacklog,
		}
		have := map[string]bool{"rate": s.Rate != nil, "cpu": s.CPUus != nil, "startup": s.StartupMs != nil, "idle": s.IdleCPU != nil, "attrs": s.AttrsP99ms != nil}
		for k, want := range need {
			if want && !have[k] {
				t.Errorf("%s %d: no %s figure: %+v", s.Axis, s.N, k, s)
			}
		}
		if s.P99ms == nil || s.RSSMiB == nil || s.Requests == 0 {
			t.Errorf("%s %d: no latency, RSS or requests: %+v", s.Axis, s.N, s)
		}
	}

	out := t.TempDir()
	raw := filepath.Join(out, "run.json")
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, []string{"scale", "--render", raw, "--render", raw, "--out", out, "--command", "ferry scale --quick"}, func(string) string { return "" }, &stdout, &stderr); code != 0 {
		t.Fatalf("render: code %d: %s", code, stderr.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "scaling.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "`ferry scale --quick`") || strings.Count(string(md), "\n| 2,000 |") != 2 {
		t.Errorf("page of two joined runs:\n%s", md)
	}
	if _, err := os.Stat(filepath.Join(out, "scaling.svg")); err != nil {
		t.Error(err)
	}
	if _, err := os.Stat(filepath.Join(out, "raw", "scaling.json")); err == nil {
		t.Error("a render wrote a raw report")
	}
}

// children lists the processes whose parent is this one.
func children(t *testing.T) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var kids []int
	for _, de := range entries {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + de.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command, which is in parentheses: state, ppid.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			kids = append(kids, pid)
		}
	}
	return kids
}
