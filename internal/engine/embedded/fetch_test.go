package embedded

import (
	"crypto/rand"
	"testing"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/testwait"
)

func TestMessageIDs(t *testing.T) {
	for _, n := range []int{1, 2, 10} {
		rnd := make([]byte, 16*n)
		if _, err := rand.Read(rnd); err != nil {
			t.Fatal(err)
		}
		ids := messageIDs(rnd)
		for i := range n {
			want := uuid.UUID(rnd[16*i : 16*i+16])
			want[6] = want[6]&0x0f | 0x40
			want[8] = want[8]&0x3f | 0x80
			got := messageID(ids, i)
			if got != want.String() {
				t.Errorf("n=%d id %d = %q, want %q", n, i, got, want)
			}
			if u, err := uuid.Parse(got); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
				t.Errorf("id %q: %v, version %d, variant %v", got, err, u.Version(), u.Variant())
			}
		}
	}
}

func TestSentRecordsRecord(t *testing.T) {
	r := &sentRecords{first: 7, buf: []byte("aabbbc"), ends: []int{2, 5, 6}}
	for _, tc := range []struct {
		seq  uint64
		want string // "-" for nil
	}{
		{6, "-"}, {7, "aa"}, {8, "bbb"}, {9, "c"}, {10, "-"},
	} {
		got := r.record(tc.seq)
		if s := string(got); (got == nil) != (tc.want == "-") || got != nil && s != tc.want {
			t.Errorf("record(%d) = %q, want %q", tc.seq, got, tc.want)
		}
	}
	var none *sentRecords
	if got := none.record(7); got != nil {
		t.Errorf("nil records: record(7) = %q", got)
	}
}

// awaitWaiter returns once a receive waits on the queue.
func awaitWaiter(tb testing.TB, e *Engine, name string) {
	tb.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		tb.Fatal(err)
	}
	testwait.Eventually(tb, "a receive waiting on "+name, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.waiters.Len() > 0
	})
}
