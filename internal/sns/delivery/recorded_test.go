package delivery

import (
	"strconv"
	"strings"
	"testing"
)

// TestDeliveryLogBudget: the recorded deliveries are bounded in bytes as
// well as in number: 10,000 Lambda or SMS deliveries of 256 KiB messages
// (each kept twice, as Message and as the Body around it) would otherwise
// hold 5 GiB. The newest stay, the oldest go, and a clear empties it.
func TestDeliveryLogBudget(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		entries   int
		msgSize   int
		maxBytes  int
		wantCount int
	}{
		{"small entries: the count bounds", 50, 10, 1 << 20, 20},
		{"large entries: the bytes bound", 50, 10_000, 100_000, 4}, // about 20 KB each
		{"one entry over the budget is still kept", 3, 200_000, 100_000, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := newRecordLog(20, tc.maxBytes)
			for i := range tc.entries {
				text := strings.Repeat("m", tc.msgSize)
				l.add(Record{Protocol: "lambda", MessageId: strconv.Itoa(i), Message: text, Body: "{" + text + "}"})
			}
			got := l.list(func(*Record) bool { return true })
			if len(got) != tc.wantCount {
				t.Fatalf("%d kept, want %d", len(got), tc.wantCount)
			}
			for i, d := range got {
				if want := strconv.Itoa(tc.entries - tc.wantCount + i); d.MessageId != want {
					t.Fatalf("entry %d is %s, want %s (the newest, oldest first)", i, d.MessageId, want)
				}
			}
			if l.bytes > max(tc.maxBytes, recordSize(&got[len(got)-1])) {
				t.Errorf("%d bytes kept, budget %d", l.bytes, tc.maxBytes)
			}
			l.clear()
			if n := len(l.list(func(*Record) bool { return true })); n != 0 || l.bytes != 0 {
				t.Errorf("after clear: %d entries, %d bytes", n, l.bytes)
			}
		})
	}
}
