package embedded

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/uuid"

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
		{
			Account: "1", Name: "src", ARN: "arn:aws:sqs:us-east-1:1:src",
			Settings: engine.QueueSettings{Redrive: &engine.Redrive{TargetAccount: "1", TargetName: "dlq", MaxReceiveCount: 1000}},
		},
		{
			Account: "1", Name: "f.fifo",
			Settings: engine.QueueSettings{FIFO: true, DeduplicationScope: engine.DeduplicationScopeMessageGroup},
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

// Records written before ARNs and redrive policies existed (version 1), and
// before FIFO queues (version 2), still read.
func TestQueueRecordOldVersions(t *testing.T) {
	q := engine.Queue{Account: "1", Name: "q", Tags: map[string]string{"k": "v"}, Created: time.Unix(5, 0).UTC()}
	v := encodeQueue(nil, &q)
	// Version 3 appends the FIFO flag (0) and scope (empty); version 2 the
	// ARN (empty) and the redrive flag (0).
	v2 := append([]byte{recordVersion2}, v[1:len(v)-2]...)
	v1 := append([]byte{recordVersion}, v[1:len(v)-4]...)
	for name, rec := range map[string][]byte{"1": v1, "2": v2} {
		got, err := decodeQueue(rec)
		if err != nil || !reflect.DeepEqual(got, q) {
			t.Fatalf("version %s record: %+v, %v", name, got, err)
		}
	}
	nm := engine.NewMessage{Body: "b", MD5OfSysAttrs: "s", MessageGroupID: "g"}
	v4 := encodeMessage(nil, "id", 1, 2, &nm, "")
	// Version 4 inserts after the two times (one byte each here) the entry
	// (zero delta, zero receives); version 3 appends the deduplication id,
	// version 2 the source ARN.
	mv := append([]byte{recordVersion3, v4[1], v4[2]}, v4[5:]...)
	mv2 := append([]byte{recordVersion2}, mv[1:len(mv)-1]...)
	mv1 := append([]byte{recordVersion}, mv[1:len(mv)-2]...)
	for name, rec := range map[string][]byte{"1": mv1, "2": mv2, "3": mv} {
		if s, vis, in, err := decodeMessageHead(rec); err != nil || s != 1 || vis != 2 || in != (msgEntry{}) {
			t.Fatalf("version %s head: %d %d %+v %v", name, s, vis, in, err)
		}
		var m engine.Message
		if err := decodeMessage(rec, &m); err != nil || m.Body != "b" || m.MessageID != "id" {
			t.Fatalf("version %s message: %+v, %v", name, m, err)
		}
		sm, err := decodeStoredMessage(rec)
		if err != nil || sm.msg.MD5OfSysAttrs != "s" || sm.dlqSource != "" {
			t.Fatalf("version %s stored message: %+v, %v", name, sm, err)
		}
		if g, err := decodeMessageGroup(rec); err != nil || g != "g" {
			t.Fatalf("version %s message group: %q, %v", name, g, err)
		}
	}
}

func TestDedupRecordRoundTrip(t *testing.T) {
	for _, d := range []dedupRecord{
		{},
		{sentAt: 1_900_000_000_000_000_000, group: "g", dedupID: "d\u00e9", messageID: "m"},
	} {
		got, err := decodeDedup(encodeDedup(nil, &d))
		if err != nil || got != d {
			t.Errorf("round trip of %+v: %+v, %v", d, got, err)
		}
	}
	a, b, c := dedupRecordKey(1, 255), dedupRecordKey(1, 256), dedupRecordKey(2, 0)
	lo, hi := queueDedupSpan(1)
	if string(a) >= string(b) || string(a) < string(lo) || string(b) >= string(hi) || string(c) < string(hi) {
		t.Fatal("deduplication keys do not sort by queue, then seq")
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
			DeduplicationID: "dedup",
		},
	}
	for _, nm := range tests {
		const sentAt, visibleAt = int64(1_900_000_000_000_000_000), int64(1_900_000_001_000_000_000)
		v := encodeMessage(nil, "id-1", sentAt, visibleAt, &nm, "arn:src")
		s, vis, in, err := decodeMessageHead(v)
		if err != nil || s != sentAt || vis != visibleAt || in != (msgEntry{}) {
			t.Fatalf("head = %d %d %+v %v", s, vis, in, err)
		}
		// A redrive's record keeps when and with how many receives the
		// message entered; the rest reads the same.
		moved := msgEntry{movedAt: sentAt + 86_400_000_000_000, movedReceives: 5}
		mv := encodeMovedMessage(nil, "id-1", sentAt, visibleAt, moved, &nm, "arn:src")
		if s, vis, in, err := decodeMessageHead(mv); err != nil || s != sentAt || vis != visibleAt || in != moved {
			t.Fatalf("moved head = %d %d %+v %v", s, vis, in, err)
		}
		var mm engine.Message
		if err := decodeMessage(mv, &mm); err != nil {
			t.Fatal(err)
		}
		var m engine.Message
		if err := decodeMessage(v, &m); err != nil {
			t.Fatal(err)
		}
		want := engine.Message{
			MessageID: "id-1", Body: nm.Body, Attributes: nm.Attributes, TraceHeader: nm.TraceHeader,
			MessageGroupID: nm.MessageGroupID, SenderID: nm.SenderID, MD5OfBody: nm.MD5OfBody, MD5OfAttrs: nm.MD5OfAttrs,
			SentAt: fromNanos(sentAt), DeadLetterSourceARN: "arn:src", DeduplicationID: nm.DeduplicationID,
		}
		if !reflect.DeepEqual(m, want) {
			t.Errorf("round trip:\n got %+v\nwant %+v", m, want)
		}
		if !reflect.DeepEqual(mm, want) {
			t.Errorf("moved round trip:\n got %+v\nwant %+v", mm, want)
		}
		if g, err := decodeMessageGroup(v); err != nil || g != nm.MessageGroupID {
			t.Errorf("group = %q, %v", g, err)
		}
		sm, err := decodeStoredMessage(v)
		if err != nil {
			t.Fatal(err)
		}
		if sm.id != "id-1" || sm.sentAt != sentAt || sm.dlqSource != "arn:src" || !reflect.DeepEqual(sm.msg, nm) {
			t.Errorf("stored message:\n got %+v\nwant %+v", sm, nm)
		}
	}
}

// TestMessageRecordCap: a record fits the size encodeMovedMessage grows
// its buffer to, so encoding into an empty buffer allocates once.
func TestMessageRecordCap(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	tests := []struct {
		name string
		m    engine.NewMessage
		dlq  string
	}{
		{"empty", engine.NewMessage{}, ""},
		{"small", engine.NewMessage{Body: "hello", MD5OfBody: "5d41402abc4b2a76b9719d911017c592", SenderID: "AIDA"}, ""},
		{"large", engine.NewMessage{
			Body: long, TraceHeader: "Root=1-" + long[:100], MessageGroupID: long[:128], SenderID: "AIDA",
			MD5OfBody: "a", MD5OfAttrs: "b", MD5OfSysAttrs: "c", DeduplicationID: long[:128],
			Attributes: []engine.MessageAttribute{
				{Name: "bin", DataType: "Binary", BinaryValue: []byte(long[:300])},
				{Name: "s", DataType: "String", StringValue: long[:70000]},
			},
		}, "arn:aws:sqs:us-east-1:000000000000:" + long[:80]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			moved := msgEntry{movedAt: math.MaxInt64, movedReceives: math.MaxUint32}
			rec := encodeMovedMessage(nil, "id-1", math.MinInt64, math.MaxInt64, moved, &tt.m, tt.dlq)
			if bound := messageRecordCap(len("id-1"), &tt.m, len(tt.dlq)); len(rec) > bound {
				t.Errorf("record of %d bytes, bound %d", len(rec), bound)
			}
			if raceDetector {
				return
			}
			allocs := testing.AllocsPerRun(10, func() {
				_ = encodeMovedMessage(nil, "id-1", math.MinInt64, math.MaxInt64, moved, &tt.m, tt.dlq)
			})
			if allocs != 1 {
				t.Errorf("encoding allocates %v times, want 1", allocs)
			}
		})
	}
}

func TestTaskRecordRoundTrip(t *testing.T) {
	tests := []engine.MoveTask{
		{ID: "id", Status: engine.MoveTaskRunning},
		{
			ID: "5b0ac1e4", SourceAccount: "1", SourceName: "dlq", SourceARN: "arn:dlq", DestinationARN: "arn:dst",
			MaxPerSecond: 500, Status: engine.MoveTaskFailed, ToMove: 1 << 40, Moved: 7,
			Started: time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC), FailureReason: engine.MoveTaskFailureNonExistentQueue,
		},
		{ID: "refs", Status: engine.MoveTaskRunning, ToMove: 3, Refs: []string{"12", "7", "not a ref"}},
	}
	for _, mt := range tests {
		got, err := decodeTask(encodeTask(nil, &mt))
		if err != nil || !reflect.DeepEqual(got, mt) {
			t.Errorf("round trip:\n got %+v, %v\nwant %+v", got, err, mt)
		}
	}
	// A task without refs keeps the record a store without them reads.
	if v := encodeTask(nil, &tests[0]); v[0] != recordVersion {
		t.Errorf("a task without refs is written as version %d", v[0])
	}
	withRefs := encodeTask(nil, &tests[2])
	for n := range len(withRefs) {
		if _, err := decodeTask(withRefs[:n]); err == nil {
			t.Errorf("a task record cut to %d bytes decoded", n)
		}
	}
	bad := engine.MoveTask{ID: "x", Status: "SLEEPING"}
	if _, err := decodeTask(encodeTask(nil, &bad)); !errors.Is(err, errCorrupt) {
		t.Errorf("unknown status: err = %v", err)
	}
	k := taskKey(3, 9)
	if qid, seq, ok := parseTaskKey(k); !ok || qid != 3 || seq != 9 {
		t.Errorf("parseTaskKey = %d %d %v", qid, seq, ok)
	}
	lo, hi := queueTaskSpan(3)
	if string(k) < string(lo) || string(k) >= string(hi) || string(taskKey(4, 0)) < string(hi) {
		t.Error("task span is wrong")
	}
}

// TestTaskRecordLegacyFailure: a task record written when the store kept
// SQS's wording of the failure reason reads back as the engine's reason.
func TestTaskRecordLegacyFailure(t *testing.T) {
	for stored, want := range map[string]engine.MoveTaskFailure{
		"AWS.SimpleQueueService.NonExistentQueue": engine.MoveTaskFailureNonExistentQueue,
		"AWS.SimpleQueueService.MoveTaskTimedOut": engine.MoveTaskFailureTimedOut,
		"AWS.SimpleQueueService.InternalError":    engine.MoveTaskFailureStore,
	} {
		// The record's layout is unchanged: the reason is its last string.
		old := engine.MoveTask{ID: "id", Status: engine.MoveTaskFailed, FailureReason: engine.MoveTaskFailure(stored)}
		got, err := decodeTask(encodeTask(nil, &old))
		if err != nil || got.FailureReason != want {
			t.Errorf("stored %q reads back as %q, %v; want %q", stored, got.FailureReason, err, want)
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
	q := engine.Queue{Account: "a", Name: "n", ARN: "arn", Attributes: map[string]string{"k": "v"}, Created: time.Unix(5, 0),
		Settings: engine.QueueSettings{Redrive: &engine.Redrive{TargetAccount: "a", TargetName: "d", MaxReceiveCount: 3}, FIFO: true, DeduplicationScope: "queue"}}
	nm := engine.NewMessage{Body: "body", Attributes: []engine.MessageAttribute{{Name: "a", DataType: "Binary", BinaryValue: []byte("x")}}, DeduplicationID: "d"}
	records := map[string]struct {
		v      []byte
		decode func([]byte) error
	}{
		"queue": {encodeQueue(nil, &q), func(v []byte) error { _, err := decodeQueue(v); return err }},
		"message": {encodeMessage(nil, "id", 1, 2, &nm, "arn"), func(v []byte) error {
			var m engine.Message
			return decodeMessage(v, &m)
		}},
		"stored message": {encodeMessage(nil, "id", 1, 2, &nm, "arn"), func(v []byte) error {
			_, err := decodeStoredMessage(v)
			return err
		}},
		"task": {encodeTask(nil, &engine.MoveTask{ID: "i", Status: engine.MoveTaskRunning, Started: time.Unix(5, 0)}), func(v []byte) error {
			_, err := decodeTask(v)
			return err
		}},
		"state": {encodeState(nil, msgState{receiveCount: 1, gen: 300}), func(v []byte) error { _, err := decodeState(v); return err }},
		"dedup": {encodeDedup(nil, &dedupRecord{sentAt: 7, group: "g", dedupID: "d", messageID: "m"}), func(v []byte) error {
			_, err := decodeDedup(v)
			return err
		}},
		"deleted queue": {encodeDeleted(time.Unix(5, 0)), func(v []byte) error { _, err := decodeDeleted(v); return err }},
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
		bad[0] = recordVersion4 + 1
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

func TestDeletedRecordRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	if got, err := decodeDeleted(encodeDeleted(at)); err != nil || !got.Equal(at) {
		t.Fatalf("round trip = %v, %v", got, err)
	}
	// The account is length-prefixed: no account's keys run into another's.
	for _, n := range []qname{{"123456789012", "q"}, {"a", "b\x00c"}, {"", ""}, {"ab", ""}} {
		if got, ok := parseDeletedKey(deletedKey(n.account, n.name)); !ok || got != n {
			t.Errorf("key of %+v parses as %+v, %v", n, got, ok)
		}
	}
	for _, bad := range [][]byte{nil, {prefixDeleted}, {prefixDeleted, 5, 'a'}, {prefixQueue, 0}} {
		if got, ok := parseDeletedKey(bad); ok {
			t.Errorf("key %x parses as %+v", bad, got)
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

// recordsSize must hold every record of a send, so that a send that keeps
// its records for waiting receives encodes them without growing the buffer.
func TestRecordsSizeHoldsTheRecords(t *testing.T) {
	msgs := []engine.NewMessage{
		{Body: "x"},
		{Body: strings.Repeat("y", 256<<10), MD5OfBody: strings.Repeat("a", 32), MD5OfAttrs: strings.Repeat("b", 32),
			Attributes: []engine.MessageAttribute{
				{Name: "s", DataType: "String", StringValue: "value"},
				{Name: "b", DataType: "Binary", BinaryValue: []byte{0, 1, 2}},
			}},
		{Body: "z", TraceHeader: "Root=1-5759e988-bd862e3fe1be46a994272793", MessageGroupID: "g", DeduplicationID: "d", SenderID: "AIDA",
			MD5OfSysAttrs: strings.Repeat("c", 32)},
	}
	buf := make([]byte, 0, recordsSize(msgs))
	base := unsafe.SliceData(buf[:1])
	for i := range msgs {
		buf = encodeMessage(buf, uuid.NewString(), math.MaxInt64, math.MaxInt64, &msgs[i], "")
	}
	if unsafe.SliceData(buf) != base {
		t.Fatalf("records of %d bytes outgrew recordsSize %d", len(buf), recordsSize(msgs))
	}
}
