package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/ferrymq/ferry/internal/bench"
)

// scaleCmd measures Ferry as its state grows: for each step of each axis
// it starts a fresh durable broker (this executable, or --ferry), builds
// the step's state and measures it, then writes the scaling page, its
// chart and the raw report. --render writes the page again from raw
// reports, joining the steps of several runs.
func scaleCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("ferry scale", fmt.Sprintf("Usage: ferry scale [flags]\n\n"+
		"Starts a fresh durable Ferry on 127.0.0.1 for each step of each axis (%s), builds the\n"+
		"step's state through the AWS SDK and measures throughput, latency, CPU, RSS and startup time.\n"+
		"Writes NAME.md, NAME.svg and raw/NAME.json under --out.\n\n", strings.Join(bench.ScaleAxes(), ", ")), stderr)
	axes := fs.String("axes", strings.Join(bench.ScaleAxes(), ","), "comma-separated axes to run")
	var stepFlags, notes repeated
	var renders listFlag
	fs.Var(&stepFlags, "steps", "an axis's steps, AXIS=N,N,... (k and M allowed: backlog=1,1k,1M); repeatable")
	duration := fs.Duration("duration", bench.DefaultScaleDuration, "measured load of each step")
	concurrency := fs.Int("concurrency", bench.DefaultScaleConcurrency, "clients of the load and of a fill")
	dir := fs.String("dir", "", "directory for the steps' stores (default: the system's temporary directory)")
	binary := fs.String("ferry", "", "the ferry executable to measure (default: this one)")
	out := fs.String("out", "docs/bench", "directory of the page and chart; the raw report goes to its raw/")
	name := fs.String("name", "scaling", "file name of the page, chart and raw report, without extension")
	fs.Var(&renders, "render", "write the page from this raw report instead of running (repeatable: the steps of several runs, in order)")
	fs.Var(&notes, "note", "a line for the page's notes (repeatable)")
	command := fs.String("command", "", "the command line the page quotes (default: this one)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	cfg := bench.ScaleConfig{Binary: *binary, Dir: *dir, Duration: *duration, Concurrency: *concurrency, Steps: map[string][]int{}}
	for _, a := range strings.Split(*axes, ",") {
		if a = strings.TrimSpace(a); a != "" {
			cfg.Axes = append(cfg.Axes, a)
		}
	}
	for _, s := range stepFlags {
		if err := bench.ParseScaleSteps(s, cfg.Steps); err != nil {
			fmt.Fprintf(stderr, "ferry scale: %v\n", err)
			return 2
		}
	}
	if *duration <= 0 || *concurrency <= 0 {
		fmt.Fprintln(stderr, "ferry scale: --duration and --concurrency must be positive")
		return 2
	}
	if *command == "" {
		*command = strings.Join(append([]string{"ferry", "scale"}, args...), " ")
	}
	page := bench.ScalePage{Command: *command, Image: *name + ".svg", Notes: notes}

	var rep *bench.ScaleReport
	if len(renders) > 0 {
		var err error
		if rep, err = joinScaleReports(renders); err != nil {
			fmt.Fprintf(stderr, "ferry scale: %v\n", err)
			return 1
		}
	} else {
		if cfg.Binary == "" {
			exe, err := os.Executable()
			if err != nil {
				fmt.Fprintf(stderr, "ferry scale: %v\n", err)
				return 1
			}
			cfg.Binary = exe
		}
		cfg.Log = stderr
		cfg.Progress = func(s bench.ScaleStep) {
			b, _ := json.Marshal(s)
			fmt.Fprintf(stdout, "%s\n", b)
		}
		if pct, ok := gcPercent(getenv, benchGCPercent); ok {
			debug.SetGCPercent(pct)
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		var err error
		rep, err = bench.Scale(ctx, cfg)
		if err != nil && (rep == nil || len(rep.Steps) == 0) {
			fmt.Fprintf(stderr, "ferry %v\n", err)
			return 2
		}
		if err != nil {
			fmt.Fprintf(stderr, "ferry scale: stopped early: %v\n", err)
		}
	}
	if err := writeScalePages(*out, *name, page, rep, len(renders) == 0); err != nil {
		fmt.Fprintf(stderr, "ferry scale: %v\n", err)
		return 1
	}
	if rep.Failed() {
		return 1
	}
	return 0
}

// joinScaleReports reads raw reports and joins their steps into one,
// dated from the first start to the last finish.
func joinScaleReports(paths []string) (*bench.ScaleReport, error) {
	var joined *bench.ScaleReport
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var rep bench.ScaleReport
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if joined == nil {
			joined = &rep
			continue
		}
		joined.Steps = append(joined.Steps, rep.Steps...)
		if rep.Finished.After(joined.Finished) {
			joined.Finished = rep.Finished
		}
		if rep.Started.Before(joined.Started) {
			joined.Started = rep.Started
		}
	}
	return joined, nil
}

// writeScalePages writes NAME.md and NAME.svg under out, and the raw
// report as raw/NAME.json when raw is set.
func writeScalePages(out, name string, page bench.ScalePage, rep *bench.ScaleReport, raw bool) error {
	if err := os.MkdirAll(filepath.Join(out, "raw"), 0o755); err != nil {
		return err
	}
	write := func(path string, render func(io.Writer) error) error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := render(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", path, err)
		}
		return f.Close()
	}
	if raw {
		if err := write(filepath.Join(out, "raw", name+".json"), func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rep)
		}); err != nil {
			return err
		}
	}
	if err := write(filepath.Join(out, name+".md"), func(w io.Writer) error { return bench.WriteScaleMarkdown(w, page, rep) }); err != nil {
		return err
	}
	return write(filepath.Join(out, name+".svg"), func(w io.Writer) error { return bench.WriteScaleSVG(w, rep) })
}

// repeated is a flag given several times, each value whole (commas are
// part of it, unlike listFlag's).
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
