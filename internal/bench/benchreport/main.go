// Command benchreport turns the JSON reports of `ferry bench --json`, one
// per broker, into docs: a Markdown table and an SVG bar chart.
//
//	go run ./internal/bench/benchreport -out docs/bench \
//	    -fact "CPU: ..." ferry=ferry.json goaws=goaws.json
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferrymq/ferry/internal/bench"
)

type facts []string

func (f *facts) String() string     { return strings.Join(*f, "; ") }
func (f *facts) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	out := flag.String("out", ".", "directory for results.md and results.svg")
	var fs facts
	flag.Var(&fs, "fact", "a line about the machine or the run (repeatable)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "Usage: benchreport [-out DIR] [-fact TEXT]... BROKER=REPORT.json...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out, fs, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(out string, fs []string, args []string) error {
	var cols []bench.Column
	for _, a := range args {
		broker, path, ok := strings.Cut(a, "=")
		if !ok || broker == "" {
			return fmt.Errorf("argument %q is not BROKER=REPORT.json", a)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var rep bench.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		cols = append(cols, bench.Column{Broker: broker, Report: &rep})
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	write := func(name string, render func(*os.File) error) error {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return err
		}
		if err := render(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", name, err)
		}
		return f.Close()
	}
	if err := write("results.md", func(f *os.File) error { return bench.WriteMarkdown(f, fs, cols) }); err != nil {
		return err
	}
	return write("results.svg", func(f *os.File) error { return bench.WriteSVG(f, cols) })
}
