package bench

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestBatchAnswer(t *testing.T) {
	ids := func(v ...string) []*string {
		out := make([]*string, len(v))
		for i, s := range v {
			out[i] = aws.String(s)
		}
		return out
	}
	fail := func(id string) batchFailure {
		return batchFailure{aws.String(id), aws.String("InternalError"), aws.String("boom")}
	}
	cases := []struct {
		name   string
		ok     []*string
		failed []batchFailure
		bad    int
		acked  int
		first  string
	}{
		{"all taken", ids("0", "1", "2"), nil, 0, 3, ""},
		{"answered out of order", ids("2", "0", "1"), nil, 0, 3, ""},
		{"one failed", ids("0", "2"), []batchFailure{fail("1")}, 1, 2, "Op entry: InternalError: boom"},
		{"one left out", ids("0", "1"), nil, 1, 2, "Op: entry 2 missing from the answer"},
		{"repeated", ids("0", "0", "1", "2"), nil, 1, 3, `Op: answer for unknown or repeated entry "0"`},
		{"both taken and failed", ids("0", "1", "2"), []batchFailure{fail("1")}, 1, 3, `repeated entry "1"`},
		{"unknown ids", ids("0", "1", "2", "3", "x"), nil, 2, 3, `unknown or repeated entry "3"`},
		{"no answer", nil, nil, 3, 0, "Op: entry 0 missing"},
	}
	for _, tc := range cases {
		l := NewLedger(1)
		stamps := make([]Stamp, 3)
		for i := range stamps {
			stamps[i] = Stamp{Run: "r", Seq: l.Next()}
		}
		bad, err := batchAnswer("Op", l, stamps, tc.ok, tc.failed)
		if bad != tc.bad || l.Tally().Acked != tc.acked {
			t.Errorf("%s: %d bad, %d acked; want %d, %d", tc.name, bad, l.Tally().Acked, tc.bad, tc.acked)
		}
		switch {
		case tc.first == "" && err != nil:
			t.Errorf("%s: error %v", tc.name, err)
		case tc.first != "" && (err == nil || !strings.Contains(err.Error(), tc.first)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.first)
		}
	}
}
