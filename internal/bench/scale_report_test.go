package bench

import (
	"bytes"
	"encoding/xml"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScaleSteps(t *testing.T) {
	cases := []struct {
		spec string
		axis string
		want []int
		err  string
	}{
		{"backlog=1,1k,100k,1M,10M", AxisBacklog, []int{1, 1_000, 100_000, 1_000_000, 10_000_000}, ""},
		{"queues=1, 10_000", AxisQueues, []int{1, 10_000}, ""},
		{"polls=5", AxisPolls, []int{5}, ""},
		{"subscriptions=2k", AxisSubscriptions, []int{2_000}, ""},
		{"backlog", "", nil, "want AXIS=N"},
		{"topics=1", "", nil, "want AXIS=N"},
		{"queues=0", "", nil, "positive whole number"},
		{"queues=-3", "", nil, "positive whole number"},
		{"queues=1,,2", "", nil, "positive whole number"},
		{"queues=1.5k", "", nil, "positive whole number"},
		{"queues=3000M", "", nil, "positive whole number"},
		{"queues=10K", "", nil, "positive whole number"},
	}
	for _, tc := range cases {
		steps := map[string][]int{}
		err := ParseScaleSteps(tc.spec, steps)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if !reflect.DeepEqual(steps, map[string][]int{tc.axis: tc.want}) {
			t.Errorf("%q: %v, want %s=%v", tc.spec, steps, tc.axis, tc.want)
		}
	}
}

func TestScaleConfigFill(t *testing.T) {
	c := ScaleConfig{Binary: "ferry", Steps: map[string][]int{AxisBacklog: {7}}}
	if err := c.fill(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Axes, ScaleAxes()) || !reflect.DeepEqual(c.Steps[AxisBacklog], []int{7}) ||
		!reflect.DeepEqual(c.Steps[AxisQueues], DefaultScaleSteps()[AxisQueues]) || c.Duration != DefaultScaleDuration {
		t.Errorf("filled config %+v", c)
	}
	for _, bad := range []ScaleConfig{{}, {Binary: "ferry", Axes: []string{"topics"}}} {
		if err := bad.fill(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}

func sampleScaleReport() *ScaleReport {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return &ScaleReport{
		Started: start, Finished: start.Add(90 * time.Second), Duration: "5s", Clients: 16,
		Machine: []string{"CPU: test"},
		Steps: []ScaleStep{
			{Axis: AxisQueues, N: 1, Rate: f(9000), Unit: "msgs/s", P50ms: f(4), P99ms: f(20), CPUus: f(70), RSSMiB: f(50), StartupMs: f(80), FillSeconds: f(0.01)},
			{Axis: AxisQueues, N: 10_000, Rate: f(8000), Unit: "msgs/s", P99ms: f(25), Errors: 2, Note: "first error: <boom>"},
			{Axis: AxisBacklog, N: 10_000_000, Rate: f(7000), Unit: "msgs/s", AttrsP99ms: f(0.5), FillSeconds: f(300)},
			{Axis: AxisPolls, N: 100, IdleCPU: f(1.5), P99ms: f(1.2)},
			{Axis: AxisSubscriptions, N: 10, Rate: f(100), Unit: "publishes/s"},
		},
	}
}

func TestWriteScaleMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteScaleMarkdown(&b, ScalePage{Command: "ferry scale --out docs/bench", Image: "scaling.svg", Notes: []string{"a note"}}, sampleScaleReport()); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"- date: 2026-01-02 03:04 (UTC), 1m30s",
		"- command: `ferry scale --out docs/bench`",
		"- CPU: test",
		"![scaling](scaling.svg)",
		"## queues", "## backlog", "## polls", "## subscriptions",
		"| queues | create | msgs/s | p50 | p99 | CPU/message | RSS | startup | errors |",
		"| 1 | 0.01 s | 9,000 | 4.0ms | 20.0ms | 70.0 µs | 50.0 MiB | 80.0ms | 0 |",
		"| 10,000 | – | 8,000 | – | 25.0ms | – | – | – | 2 |",
		"- 10,000 queues: first error: &lt;boom>",
		"| 10,000,000 | 300.00 s | – | 7,000 | – | – | – | 0.500ms |",
		"| 100 | 1.5 ms/s | – | – | 1.2ms | 0 |",
		"| 10 | 100 | 1,000 |",
		"## Notes\n\n- a note",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("page lacks %q\n%s", want, md)
		}
	}
}

func TestWriteScaleSVG(t *testing.T) {
	var b bytes.Buffer
	if err := WriteScaleSVG(&b, sampleScaleReport()); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	wellFormed(t, svg)
	for _, want := range []string{">10,000 queues<", ">10,000,000 messages<", ">errors: 2<", ">no figure<", "9,000", "while the polls wait", "p99 publish latency"} {
		if !strings.Contains(svg, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
	// Each panel has its own scale: its largest bar is full width. The
	// queues' rate panel has two bars, 9,000 full and 8,000 not.
	if !strings.Contains(svg, `width="520.0"`) || !strings.Contains(svg, `width="462.2"`) {
		t.Errorf("bars not scaled per panel:\n%s", svg)
	}
}

// wellFormed fails t unless doc is well-formed XML.
func wellFormed(t *testing.T, doc string) {
	t.Helper()
	dec := xml.NewDecoder(strings.NewReader(doc))
	for {
		if _, err := dec.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
	}
}
