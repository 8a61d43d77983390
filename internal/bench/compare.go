package bench

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Column is one broker's report in a comparison.
type Column struct {
	Broker string
	Report *Report
}

// scenarioRows lists the scenarios of cols: the catalogue's order first,
// then any the catalogue does not know, as they come.
func scenarioRows(cols []Column) []string {
	rows := Scenarios()
	present := map[string]bool{}
	for _, c := range cols {
		for _, r := range c.Report.Results {
			present[r.Name] = true
			if !slices.Contains(rows, r.Name) {
				rows = append(rows, r.Name)
			}
		}
	}
	return slices.DeleteFunc(rows, func(n string) bool { return !present[n] })
}

func (c Column) result(name string) (Result, bool) {
	for _, r := range c.Report.Results {
		if r.Name == name {
			return r, true
		}
	}
	return Result{}, false
}

// Thousands renders v rounded, with thousands separators (one decimal
// below 100, where rounding would hide the figure).
func Thousands(v float64) string {
	if v < 100 {
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	s := strconv.FormatFloat(v, 'f', 0, 64)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Page says what a comparison's Markdown page is about.
type Page struct {
	Title  string   // the heading
	Script string   // the command that reproduces the page
	Image  string   // the chart's file name, beside the page
	Facts  []string // lines about the machine and the run
	// Ratios adds a table of each broker's figures against the first's.
	Ratios bool
}

// WriteMarkdown writes a comparison: the facts of the machine, one row per
// scenario and one column per broker, and the notes of every result that
// was not plainly ok.
func WriteMarkdown(w io.Writer, page Page, cols []Column) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("# %s\n\n", page.Title)
	p("Every figure comes from `ferry bench` driving the broker through aws-sdk-go-v2 on the same machine, ")
	p("over loopback. Each scenario checks every message it sends (unique bodies, each accounted for ")
	p("exactly once, FIFO order within each group): a wrong answer reads FAIL, whatever its speed. ")
	p("`%s` reproduces the page (its settings are at its top).\n\n", page.Script)
	if hasCeiling(cols) {
		p("The ceiling is `ferry ceiling`, a measuring fixture, not a broker: it answers every call at once ")
		p("with a valid, precomputed AWS answer (the digest of each body sent computed) and holds nothing, so its ")
		p("messages are counted, not verified, and the scenarios that need held messages do not run on it. ")
		p("It is what this client gets on this machine from a broker that does no work; each broker's rate is ")
		p("also given as a share of the ceiling's.\n\n")
	}
	if len(page.Facts) > 0 {
		p("## Machine and run\n\n")
		for _, f := range page.Facts {
			p("- %s\n", f)
		}
		p("\n")
	}
	p("## Results\n\n")
	p("![results](%s)\n\n", page.Image)
	p("| Scenario | Latency measured |")
	for _, c := range cols {
		p(" %s |", mdEscape(c.Broker))
	}
	p("\n|---|---|")
	for range cols {
		p("---|")
	}
	p("\n")
	for _, name := range scenarioRows(cols) {
		latency := ""
		for _, c := range cols {
			if r, ok := c.result(name); ok && r.Latency != "" {
				latency = r.Latency
				break
			}
		}
		p("| %s | %s |", name, latency)
		top, hasTop := ceilingOf(cols, name)
		for _, c := range cols {
			r, ok := c.result(name)
			if !ok {
				p(" – |")
				continue
			}
			text := cell(r)
			if hasTop && r.Status != StatusCeiling && !unsupported(r) && top.Rate > 0 {
				text += "<br>" + share(r.Rate/top.Rate) + " of the ceiling"
			}
			p(" %s |", text)
		}
		p("\n")
	}
	writeCosts(p, cols)
	// The ceiling's share is in the table already, and its figures are
	// not a broker's: the ratios are of the brokers, against the first.
	if brokers := withoutCeiling(cols); page.Ratios && len(brokers) > 1 {
		writeRatios(p, brokers)
	}
	p("\n## Scenarios\n\n")
	for _, name := range scenarioRows(cols) {
		if about := About(name); about != "" {
			p("- **%s**: %s\n", name, about)
		}
	}
	var notes []string
	for _, c := range cols {
		for _, r := range c.Report.Results {
			if r.Note != "" && ((r.Status != StatusOK && r.Status != StatusCeiling) || r.Unverified > 0) {
				notes = append(notes, fmt.Sprintf("- **%s, %s** (%s): %s", mdEscape(c.Broker), r.Name, r.Status, mdEscape(r.Note)))
			}
		}
	}
	if len(notes) > 0 {
		p("\n## Notes on results that were not plainly ok\n\n%s\n", strings.Join(notes, "\n"))
	}
	return bw.Flush()
}

// cell renders one result for a Markdown table.
func cell(r Result) string {
	switch r.Status {
	case StatusUnsupported:
		return "unsupported"
	case StatusError:
		return "error"
	}
	var b strings.Builder
	if r.Status == StatusFail {
		b.WriteString("**FAIL** ")
	}
	fmt.Fprintf(&b, "%s %s", Thousands(r.Rate), r.Unit)
	if r.P50ms != nil && r.P99ms != nil {
		fmt.Fprintf(&b, "<br>p50 %s, p99 %s", FormatMillis(*r.P50ms), FormatMillis(*r.P99ms))
	}
	if r.Status == StatusFail {
		fmt.Fprintf(&b, "<br>lost %d, dup %d, out of order %d, errors %d", r.Lost, r.Duplicated, r.OutOfOrder, r.Errors)
	}
	if r.Unverified > 0 {
		fmt.Fprintf(&b, "<br>%s not received in time, still queued", Thousands(float64(r.Unverified)))
	}
	return b.String()
}

// hasCeiling reports whether any result of cols is the ceiling's.
func hasCeiling(cols []Column) bool {
	for _, c := range cols {
		for _, r := range c.Report.Results {
			if r.Status == StatusCeiling {
				return true
			}
		}
	}
	return false
}

// withoutCeiling is cols less the ceiling's columns.
func withoutCeiling(cols []Column) []Column {
	var out []Column
	for _, c := range cols {
		if !hasCeiling([]Column{c}) {
			out = append(out, c)
		}
	}
	return out
}

// ceilingOf is the ceiling's result of scenario name, if a column has one.
func ceilingOf(cols []Column, name string) (Result, bool) {
	for _, c := range cols {
		if r, ok := c.result(name); ok && r.Status == StatusCeiling {
			return r, true
		}
	}
	return Result{}, false
}

// share renders a fraction as a percentage, with a decimal below 10%.
func share(v float64) string {
	if v < 0.1 {
		return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*v, 'f', 0, 64) + "%"
}

// writeCosts writes the second table: what each message cost, in CPU on
// each side and in receive calls.
func writeCosts(p func(string, ...any), cols []Column) {
	p("\n### CPU and round trips\n\n")
	p("Server CPU is the broker's processes' (with their children's) per message and per HTTP request, over ")
	p("each scenario's whole life (sending, receiving, deleting); db is its database's; client is ferry bench's ")
	p("own per message, the SDK clients' and the checks'; msgs/receive is what each ReceiveMessage answered ")
	p("with. Lower CPU is better.\n\n| Scenario |")
	for _, c := range cols {
		p(" %s |", mdEscape(c.Broker))
	}
	p("\n|---|")
	for range cols {
		p("---|")
	}
	p("\n")
	for _, name := range scenarioRows(cols) {
		p("| %s |", name)
		for _, c := range cols {
			r, ok := c.result(name)
			if !ok {
				p(" – |")
				continue
			}
			p(" %s |", costCell(r))
		}
		p("\n")
	}
}

// costCell is r's CPU figures and messages per receive; "–" without any.
func costCell(r Result) string {
	if unsupported(r) {
		return r.Status
	}
	var lines []string
	switch {
	case r.ServerCPU != nil && r.ServerCPUPerRequest != nil:
		lines = append(lines, fmt.Sprintf("server %s µs/msg, %s µs/req", Thousands(*r.ServerCPU), Thousands(*r.ServerCPUPerRequest)))
	case r.ServerCPU != nil:
		lines = append(lines, fmt.Sprintf("server %s µs/msg", Thousands(*r.ServerCPU)))
	}
	if r.DBCPU != nil {
		lines = append(lines, fmt.Sprintf("db %s µs/msg", Thousands(*r.DBCPU)))
	}
	if r.ClientCPU != nil {
		lines = append(lines, fmt.Sprintf("client %s µs/msg", Thousands(*r.ClientCPU)))
	}
	if r.PerReceive != nil {
		lines = append(lines, strconv.FormatFloat(*r.PerReceive, 'f', 2, 64)+" msgs/receive")
	}
	if len(lines) == 0 {
		return "–"
	}
	return strings.Join(lines, "<br>")
}

// totalCPU is the CPU per message of the broker and its database.
func totalCPU(r Result) (float64, bool) {
	if r.ServerCPU == nil {
		return 0, false
	}
	v := *r.ServerCPU
	if r.DBCPU != nil {
		v += *r.DBCPU
	}
	return v, true
}

// writeRatios writes each broker's rate, median latency and CPU per
// message (its own and its database's) as multiples of the first
// broker's, for the scenarios both ran correctly.
func writeRatios(p func(string, ...any), cols []Column) {
	base := cols[0]
	p("\n### Against %s\n\n", mdEscape(base.Broker))
	p("Each figure divided by %s's in the same run: rate (higher is better), p50 latency and CPU per ", mdEscape(base.Broker))
	p("message, the broker's and its database's together (lower is better).\n\n| Scenario |")
	for _, c := range cols[1:] {
		p(" %s ÷ %s |", mdEscape(c.Broker), mdEscape(base.Broker))
	}
	p("\n|---|")
	for range cols[1:] {
		p("---|")
	}
	p("\n")
	ratio := func(v, of float64) string {
		if of <= 0 {
			return "–"
		}
		return strconv.FormatFloat(v/of, 'f', 2, 64) + "×"
	}
	for _, name := range scenarioRows(cols) {
		b, ok := base.result(name)
		if !ok || b.Status != StatusOK {
			continue
		}
		p("| %s |", name)
		for _, c := range cols[1:] {
			r, ok := c.result(name)
			switch {
			case !ok:
				p(" – |")
				continue
			case r.Status != StatusOK:
				p(" %s |", r.Status)
				continue
			}
			parts := []string{"rate " + ratio(r.Rate, b.Rate)}
			if r.P50ms != nil && b.P50ms != nil {
				parts = append(parts, "p50 "+ratio(*r.P50ms, *b.P50ms))
			}
			rc, rok := totalCPU(r)
			bc, bok := totalCPU(b)
			if rok && bok {
				parts = append(parts, "CPU "+ratio(rc, bc))
			}
			p(" %s |", strings.Join(parts, ", "))
		}
		p("\n")
	}
}

func mdEscape(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;", "*", `\*`, "_", `\_`).Replace(s)
}

// chartMetric is what the chart draws for a scenario: the rate, except
// where the rate is fixed by design and the latency is the point.
func chartMetric(name string) (label string, value func(Result) (float64, bool)) {
	if name == "long-poll-wakeup" {
		return "p50 wake-up latency, ms (lower is better)", func(r Result) (float64, bool) {
			if r.P50ms == nil {
				return 0, false
			}
			return *r.P50ms, true
		}
	}
	return "", func(r Result) (float64, bool) { return r.Rate, true }
}

// WriteSVG draws a comparison as horizontal bars, one panel per scenario
// with a scale of its own (the scenarios' rates differ by orders of
// magnitude), one bar per broker, each labelled with its figure. Results
// that failed keep their bar and say FAIL, slow ones say how many messages
// were still queued; unsupported ones have no bar.
func WriteSVG(w io.Writer, cols []Column) error {
	chart := barChart{heading: "ferry bench: each scenario on its own scale; higher is better unless marked"}
	for _, c := range cols {
		chart.legend = append(chart.legend, c.Broker)
	}
	for _, name := range scenarioRows(cols) {
		label, value := chartMetric(name)
		if label == "" {
			for _, c := range cols {
				if r, ok := c.result(name); ok && !unsupported(r) {
					label = r.Unit
					break
				}
			}
		}
		pn := barPanel{title: name, label: label}
		for i, c := range cols {
			b := bar{label: c.Broker, colour: i}
			r, ok := c.result(name)
			v, has := value(r)
			switch {
			case !ok:
				b.missing = "not run"
			case unsupported(r):
				b.missing = r.Status
			case !has:
				b.missing = "no figure"
			default:
				b.value, b.has = v, true
				b.text = Thousands(v)
				if name == "long-poll-wakeup" {
					b.text = FormatMillis(v)
				}
				switch {
				case r.Status == StatusFail:
					b.after, b.afterColour, b.afterBold = "FAIL", "#d62728", true
				case r.Unverified > 0:
					b.after, b.afterColour = "("+Thousands(float64(r.Unverified))+" still queued)", "#777"
				case r.Status == StatusCeiling:
					b.after, b.afterColour = "(ceiling: holds nothing, not verified)", "#777"
				}
			}
			pn.bars = append(pn.bars, b)
		}
		chart.panels = append(chart.panels, pn)
	}
	return chart.write(w)
}

func unsupported(r Result) bool { return r.Status == StatusUnsupported || r.Status == StatusError }

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
