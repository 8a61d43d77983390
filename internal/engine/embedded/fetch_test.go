package embedded

import (
	"context"
	"crypto/rand"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/ferrymq/ferry/internal/engine"
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

// A receive decodes its messages out of shared allocations; each message
// must still own its data.
func TestReceiveMessagesIndependent(t *testing.T) {
	e := openTest(t, Options{InMemory: true})
	mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
	var sent []engine.NewMessage
	for i, body := range []string{"a", "bb", "ccc"} {
		m := engine.NewMessage{Body: body}
		for j := range i + 1 {
			m.Attributes = append(m.Attributes, engine.MessageAttribute{Name: "n" + string(rune('0'+j)), DataType: "String", StringValue: body})
		}
		sent = append(sent, m)
	}
	sent = append(sent, engine.NewMessage{Body: "no attributes"})
	mustSend(t, e, "q", sent...)
	got := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10})
	if len(got) != len(sent) {
		t.Fatalf("received %d of %d", len(got), len(sent))
	}
	handles := map[string]bool{}
	for i, m := range got {
		if m.Body != sent[i].Body || !reflect.DeepEqual(m.Attributes, sent[i].Attributes) {
			t.Errorf("message %d = %q %v, want %q %v", i, m.Body, m.Attributes, sent[i].Body, sent[i].Attributes)
		}
		if _, ok := e.signer.parse(m.ReceiptHandle); !ok || handles[m.ReceiptHandle] {
			t.Errorf("message %d: bad or repeated handle %q", i, m.ReceiptHandle)
		}
		handles[m.ReceiptHandle] = true
	}
	// Growing one message's attributes leaves the next one's alone.
	got[1].Attributes = append(got[1].Attributes, engine.MessageAttribute{Name: "x"})
	if !reflect.DeepEqual(got[2].Attributes, sent[2].Attributes) {
		t.Errorf("message 2 attributes changed to %v", got[2].Attributes)
	}
}

// A long poll served by a send gets the records the send wrote without
// reading them back: they must be the messages as stored, whole, and the
// messages it leaves must still be read from the store.
func TestLongPollServedBySend(t *testing.T) {
	zero := time.Duration(0)
	sent := []engine.NewMessage{
		{Body: "plain"},
		{Body: "with attributes", Attributes: []engine.MessageAttribute{
			{Name: "b", DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
			{Name: "s", DataType: "String", StringValue: "v"},
		}, MD5OfBody: "0123456789abcdef0123456789abcdef", MD5OfAttrs: "fedcba9876543210fedcba9876543210"},
		{Body: "traced", TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793", MessageGroupID: "g", SenderID: "AIDA"},
	}
	for _, tc := range []struct {
		name string
		max  int // of the long poll
	}{
		{"all", 10},
		{"some", 2},
		{"one", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openTest(t, Options{InMemory: true})
			mustCreate(t, e, engine.Queue{Name: "q", Settings: settings()})
			type result struct {
				msgs []engine.Message
				err  error
			}
			done := make(chan result, 1)
			go func() {
				msgs, err := e.Receive(context.Background(), acct, "q", engine.ReceiveRequest{Max: tc.max, Wait: time.Minute})
				done <- result{msgs, err}
			}()
			awaitWaiter(t, e, "q")
			ids := mustSend(t, e, "q", sent...)
			r := <-done
			if r.err != nil {
				t.Fatalf("Receive: %v", r.err)
			}
			if len(r.msgs) != tc.max && len(r.msgs) != len(sent) {
				t.Fatalf("long poll got %d messages, want %d", len(r.msgs), min(tc.max, len(sent)))
			}
			// The same messages read from the store: made visible again
			// (those handed out) or never taken.
			var changes []engine.VisibilityChange
			for _, m := range r.msgs {
				changes = append(changes, engine.VisibilityChange{ReceiptHandle: m.ReceiptHandle, Timeout: zero})
			}
			if _, err := e.ChangeVisibility(context.Background(), acct, "q", changes); err != nil {
				t.Fatal(err)
			}
			stored := mustReceive(t, e, "q", engine.ReceiveRequest{Max: 10})
			if len(stored) != len(sent) {
				t.Fatalf("received %d from the store, want %d", len(stored), len(sent))
			}
			byID := map[string]engine.Message{}
			for _, m := range stored {
				byID[m.MessageID] = m
			}
			for i, m := range r.msgs {
				if m.MessageID != ids[i] {
					t.Errorf("message %d: id %s, want %s", i, m.MessageID, ids[i])
				}
				if m.ReceiveCount != 1 || m.FirstReceiveAt.IsZero() {
					t.Errorf("message %d: receive count %d, first receive %v", i, m.ReceiveCount, m.FirstReceiveAt)
				}
				want := byID[m.MessageID]
				want.ReceiptHandle, want.ReceiveCount, want.FirstReceiveAt = m.ReceiptHandle, m.ReceiveCount, m.FirstReceiveAt
				if !reflect.DeepEqual(m, want) {
					t.Errorf("message %d handed over\n %+v\nstored\n %+v", i, m, want)
				}
			}
		})
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
func awaitWaiter(t *testing.T, e *Engine, name string) {
	t.Helper()
	q, err := e.lookup(acct, name)
	if err != nil {
		t.Fatal(err)
	}
	for waiting := false; !waiting; {
		time.Sleep(time.Millisecond)
		q.mu.Lock()
		waiting = q.waiters.Len() > 0
		q.mu.Unlock()
	}
}
