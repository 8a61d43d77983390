package embedded

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

func TestQueueRecordRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	tests := []engine.Queue{
		{Account: "1", Name: "q"},
		{
			Account:    "123456789012",
			Name:       "orders.fifo",
			Attributes: map[string]string{"FifoQueue": "true", "Policy": `{"a":"\u00e9"}`},
			Tags:       map[string]string{"": "empty key", "k": ""},
			Settings: engine.QueueSettings{
				VisibilityTimeout: 12 * time.Hour, Delay: 15 * time.Minute, Retention: 14 * 24 * time.Hour,
				ReceiveWait: 20 * time.Second, MaximumSize: 1 << 20,
			},
			Created: at, Modified: at.Add(time.Second), LastPurge: at.Add(time.Minute),
		},
	}
	for _, q := range tests {
		got, err := decodeQueue(encodeQueue(nil, &q))
		if err != nil {
			t.Fatalf("decode %s: %v", q.Name, err)
		}
		if !reflect.DeepEqual(got, q) {
			t.Errorf("round trip of %s:\n got %+v\nwant %+v", q.Name, got, q)
		}
	}
}

func TestMessageRecordRoundTrip(t *testing.T) {
	tests := []engine.NewMessage{
		{Body: ""},
		{
			Body: "b\x00dy \u00e9",
			Attributes: []engine.MessageAttribute{
				{Name: "bin", DataType: "Binary", BinaryValue: []byte{0, 255}},
				{Name: "num", DataType: "Number.int", StringValue: "-1.5"},
			},
			TraceHeader: "Root=1", MessageGroupID: "g", SenderID: "AIDA", MD5OfBody: "a", MD5OfAttrs: "b", MD5OfSysAttrs: "c",
		},
	}
	for _, nm := range tests {
		const sentAt, visibleAt = int64(1_900_000_000_000_000_000), int64(1_900_000_001_000_000_000)
		v := encodeMessage(nil, "id-1", sentAt, visibleAt, &nm)
		s, vis, err := decodeMessageHead(v)
		if err != nil || s != sentAt || vis != visibleAt {
			t.Fatalf("head = %d %d %v", s, vis, err)
		}
		var m engine.Message
		if err := decodeMessage(v, &m); err != nil {
			t.Fatal(err)
		}
		want := engine.Message{
			MessageID: "id-1", Body: nm.Body, Attributes: nm.Attributes, TraceHeader: nm.TraceHeader,
			MessageGroupID: nm.MessageGroupID, SenderID: nm.SenderID, MD5OfBody: nm.MD5OfBody, MD5OfAttrs: nm.MD5OfAttrs,
			SentAt: fromNanos(sentAt),
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", m, want)
		}
	}
}

func TestStateRecordRoundTrip(t *testing.T) {
	s := msgState{receiveCount: 3, gen: 1<<50 + 7, firstReceiveAt: 1, receivedAt: -2, visibleAt: 1 << 62}
	got, err := decodeState(encodeState(nil, s))
	if err != nil || got != s {
		t.Fatalf("round trip = %+v, %v", got, err)
	}
}

// Every truncation or corruption of a record is an error, never a panic.
func TestDecodeCorrupt(t *testing.T) {
	q := engine.Queue{Account: "a", Name: "n", Attributes: map[string]string{"k": "v"}, Created: time.Unix(5, 0)}
	nm := engine.NewMessage{Body: "body", Attributes: []engine.MessageAttribute{{Name: "a", DataType: "Binary", BinaryValue: []byte("x")}}}
	records := map[string]struct {
		v      []byte
		decode func([]byte) error
	}{
		"queue": {encodeQueue(nil, &q), func(v []byte) error { _, err := decodeQueue(v); return err }},
		"message": {encodeMessage(nil, "id", 1, 2, &nm), func(v []byte) error {
			var m engine.Message
			return decodeMessage(v, &m)
		}},
		"state": {encodeState(nil, msgState{receiveCount: 1, gen: 300}), func(v []byte) error { _, err := decodeState(v); return err }},
	}
	for name, r := range records {
		for n := range len(r.v) {
			if err := r.decode(r.v[:n]); !errors.Is(err, errCorrupt) {
				t.Errorf("%s cut to %d bytes: err = %v", name, n, err)
			}
		}
		if err := r.decode(append(r.v[:len(r.v):len(r.v)], 0)); !errors.Is(err, errCorrupt) {
			t.Errorf("%s with a trailing byte: err = %v", name, err)
		}
		bad := append([]byte(nil), r.v...)
		bad[0] = recordVersion + 1
		if err := r.decode(bad); !errors.Is(err, errCorrupt) {
			t.Errorf("%s with an unknown version: err = %v", name, err)
		}
		// Huge lengths and counts.
		for i := 1; i < len(r.v); i++ {
			bad := append([]byte(nil), r.v...)
			bad[i] = 0xff
			_ = r.decode(bad)
		}
	}
}

func TestMsgKeyOrder(t *testing.T) {
	a := makeMsgKey(1, 255, kindState)
	b := makeMsgKey(1, 256, kindBody)
	c := makeMsgKey(2, 0, kindBody)
	if string(a[:]) >= string(b[:]) || string(b[:]) >= string(c[:]) {
		t.Fatal("message keys do not sort by queue, then seq")
	}
	lo, hi := queueMsgSpan(1)
	if string(a[:]) < string(lo) || string(b[:]) >= string(hi) || string(c[:]) < string(hi) {
		t.Fatal("queue span is wrong")
	}
	lo, hi = msgSpan(1, 0, 256)
	if string(a[:]) < string(lo) || string(a[:]) >= string(hi) || string(b[:]) < string(hi) {
		t.Fatal("purge span is wrong")
	}
	qid, seq, kind, ok := parseMsgKey(b[:])
	if !ok || qid != 1 || seq != 256 || kind != kindBody {
		t.Fatalf("parse = %d %d %d %v", qid, seq, kind, ok)
	}
	if _, _, _, ok := parseMsgKey(b[:17]); ok {
		t.Fatal("short key parsed")
	}
}
