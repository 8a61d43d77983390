// Command benchreport turns the JSON reports of `ferry bench --json`, one
// per broker, into docs: a Markdown table and an SVG bar chart.
//
//	go run ./internal/bench/benchreport -out docs/bench \
//	    -fact "CPU: ..." ferry=ferry.json goaws=goaws.json
//
// -name, -title and -script make another page of the same kind (the
// PostgreSQL comparison), -ratios adds each broker against the first.
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
	out := flag.String("out", ".", "directory for NAME.md and NAME.svg")
	name := flag.String("name", "results", "the pages' file name, without extension")
	title := flag.String("title", "Ferry benchmark: Ferry and its peers", "the page's heading")
	script := flag.String("script", "scripts/compare-peers", "the command that reproduces the page")
	ratios := flag.Bool("ratios", false, "add a table of every broker's figures against the first's")
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
	page := bench.Page{Title: *title, Script: *script, Image: *name + ".svg", Facts: fs, Ratios: *ratios}
	if err := run(*out, *name, page, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

func run(out, name string, page bench.Page, args []string) error {
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
	if err := write(name+".md", func(f *os.File) error { return bench.WriteMarkdown(f, page, cols) }); err != nil {
		return err
	}
	return write(name+".svg", func(f *os.File) error { return bench.WriteSVG(f, cols) })
}
