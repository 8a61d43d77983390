package bench

import (
	"strings"
	"testing"
	"time"
)

func TestBodyRoundTrip(t *testing.T) {
	sent := time.Unix(1700000000, 123456789)
	for _, st := range []Stamp{
		{Run: "0a1b2c3d", Seq: 0, Sent: sent},
		{Run: "0a1b2c3d", Seq: 987654321, Group: "g42", Index: 17, Sent: sent},
	} {
		body := st.Body()
		if len(body) != BodySize {
			t.Errorf("%+v: body of %d bytes", st, len(body))
		}
		got, ok := ParseBody(st.Run, body)
		if !ok || got.Seq != st.Seq || got.Group != st.Group || got.Index != st.Index || !got.Sent.Equal(st.Sent) {
			t.Errorf("%+v: parsed %+v, %v", st, got, ok)
		}
	}
	if a, b := (Stamp{Run: "r", Seq: 1}).Body(), (Stamp{Run: "r", Seq: 2}).Body(); a == b {
		t.Error("two messages with one body")
	}
}

func TestParseBodyRejects(t *testing.T) {
	good := Stamp{Run: "run1", Seq: 5, Sent: time.Unix(0, 42)}.Body()
	cases := map[string]string{
		"another run":     strings.Replace(good, "run1", "run2", 1),
		"empty":           "",
		"truncated":       good[:BodySize-1],
		"extended":        good + ".",
		"padding mangled": good[:BodySize-1] + "x",
		"not a number":    pad("ferry-bench run1 x - 0 42 "),
		"someone else's":  strings.Repeat("x", BodySize),
		"missing field":   pad("ferry-bench run1 5 - 0 "),
		"extra field":     pad("ferry-bench run1 5 - 0 42 43 "),
		"other prefix":    pad("ferry-bunch run1 5 - 0 42 "),
	}
	if _, ok := ParseBody("run1", pad("ferry-bench run1 5 - 0 42 ")); !ok {
		t.Fatal("the padded control body is rejected")
	}
	for name, body := range cases {
		if _, ok := ParseBody("run1", body); ok {
			t.Errorf("%s: accepted %q", name, body)
		}
	}
}

func TestBodyWithoutRoomForPadding(t *testing.T) {
	st := Stamp{Run: strings.Repeat("r", 300), Seq: 1, Sent: time.Unix(0, 1)}
	if got, ok := ParseBody(st.Run, st.Body()); !ok || got.Seq != 1 {
		t.Errorf("long body not read back: %+v %v", got, ok)
	}
}

func pad(s string) string { return s + strings.Repeat(".", BodySize-len(s)) }

func FuzzFieldsAsStringsFields(f *testing.F) {
	for _, s := range []string{"", " ", "a", " a  b\tc\n", "a\u00a0b\u0085c\u2003d", "\xffa \xc2", strings.Repeat("x ", 9)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.Fields(s)
		var buf [7]string
		n, ok := fields(s, buf[:])
		if ok != (len(want) <= len(buf)) {
			t.Fatalf("%q: ok %v with %d fields", s, ok, len(want))
		}
		if ok && strings.Join(buf[:n], "|") != strings.Join(want, "|") {
			t.Fatalf("%q: %q, want %q", s, buf[:n], want)
		}
	})
}

func BenchmarkParseBody(b *testing.B) {
	body := Stamp{Run: "0a1b2c3d", Seq: 987654321, Sent: time.Unix(1700000000, 0)}.Body()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := ParseBody("0a1b2c3d", body); !ok {
			b.Fatal("rejected")
		}
	}
}
