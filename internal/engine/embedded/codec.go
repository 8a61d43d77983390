package embedded

import (
	"encoding/binary"
	"errors"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/ferrymq/ferry/internal/engine"
)

// Key layout. Big-endian integers keep each queue's messages in seq order,
// and a message's body key sorts right before its state key, so startup
// rebuilds every index with a single forward scan.
//
//	0x01 'k'                        receipt-handle MAC key
//	0x01 'e'                        boot epoch (uint64)
//	0x01 's' name                   secret (cluster.go)
//	0x02 qid                        queue record
//	0x03 qid seq 0x01               message record: written once, deleted once
//	0x03 qid seq 0x02               message state: rewritten on receive/visibility change; ends
//	                                with the latest receive's story event while it is the only
//	                                one the history record lacks (history.go)
//	0x03 qid seq 0x03               message history: appended to by merges (history.go)
//	0x04 qid seq                    move task of source queue qid (seq from the queue's seq space)
//	0x05 kind 0x00 key              generic record (records.go)
//	0x06 qid seq                    FIFO deduplication entry of the message first sent as seq
//	0x07 minute series              one-minute metric datapoint (metricstore.go)
//	0x08 account name               name of a queue deleted less than RecreateDelay ago: when
const (
	prefixMeta    byte = 0x01
	prefixQueue   byte = 0x02
	prefixMsg     byte = 0x03
	prefixTask    byte = 0x04
	prefixDedup   byte = 0x06
	prefixMetric  byte = 0x07
	prefixDeleted byte = 0x08

	kindBody  byte = 0x01
	kindState byte = 0x02

	// recordVersion leads every record so that a later layout can be told
	// apart from this one.
	recordVersion byte = 1
	// recordVersion2 adds to queue records the ARN and redrive policy, and
	// to message records the dead-letter source ARN; version 1 records are
	// still read.
	recordVersion2 byte = 2
	// recordVersion3 adds to queue records the FIFO flag and deduplication
	// scope, and to message records the deduplication id.
	recordVersion3 byte = 3
	// recordVersion4 adds to message records, after the first visible-at,
	// when a redrive moved the message into its queue (as a delta from the
	// send time, 0 for a message that entered when sent) and its receive
	// count then.
	recordVersion4 byte = 4
)

var (
	keyMAC   = []byte{prefixMeta, 'k'}
	keyEpoch = []byte{prefixMeta, 'e'}
)

var errCorrupt = errors.New("embedded: corrupt record")

func queueKey(qid uint64) []byte {
	k := make([]byte, 9)
	k[0] = prefixQueue
	binary.BigEndian.PutUint64(k[1:], qid)
	return k
}

// deletedKey keeps a deleted queue's name reserved across restarts.
func deletedKey(account, name string) []byte {
	k := appendString([]byte{prefixDeleted}, account)
	return append(k, name...)
}

func parseDeletedKey(k []byte) (qname, bool) {
	if len(k) == 0 || k[0] != prefixDeleted {
		return qname{}, false
	}
	r := newReader(k[1:], false)
	account := r.str()
	if r.bad {
		return qname{}, false
	}
	return qname{account, string(k[1+r.off:])}, true
}

func encodeDeleted(at time.Time) []byte {
	return binary.AppendVarint([]byte{recordVersion}, at.UnixNano())
}

func decodeDeleted(v []byte) (time.Time, error) {
	r := newReader(v, false)
	if r.byte() != recordVersion {
		return time.Time{}, errCorrupt
	}
	at := fromNanos(r.varint())
	return at, r.done()
}

type msgKey [18]byte

func makeMsgKey(qid, seq uint64, kind byte) msgKey {
	var k msgKey
	k[0] = prefixMsg
	binary.BigEndian.PutUint64(k[1:9], qid)
	binary.BigEndian.PutUint64(k[9:17], seq)
	k[17] = kind
	return k
}

// msgSpan returns the key span holding the messages of qid whose seq is in
// [from, to).
func msgSpan(qid, from, to uint64) (lo, hi []byte) {
	lo = make([]byte, 17)
	hi = make([]byte, 17)
	lo[0], hi[0] = prefixMsg, prefixMsg
	binary.BigEndian.PutUint64(lo[1:9], qid)
	binary.BigEndian.PutUint64(hi[1:9], qid)
	binary.BigEndian.PutUint64(lo[9:], from)
	binary.BigEndian.PutUint64(hi[9:], to)
	return lo, hi
}

// queueSpan covers every key of qid under prefix: prefix qid ... sorts
// below prefix qid+1.
func queueSpan(prefix byte, qid uint64) (lo, hi []byte) {
	lo = make([]byte, 9)
	hi = make([]byte, 9)
	lo[0], hi[0] = prefix, prefix
	binary.BigEndian.PutUint64(lo[1:], qid)
	binary.BigEndian.PutUint64(hi[1:], qid+1)
	return lo, hi
}

// seqKey is prefix qid seq: the key of a move task or deduplication entry.
func seqKey(prefix byte, qid, seq uint64) []byte {
	k := make([]byte, 17)
	k[0] = prefix
	binary.BigEndian.PutUint64(k[1:9], qid)
	binary.BigEndian.PutUint64(k[9:], seq)
	return k
}

// queueMsgSpan covers every message of qid.
func queueMsgSpan(qid uint64) (lo, hi []byte) { return queueSpan(prefixMsg, qid) }

func taskKey(qid, seq uint64) []byte { return seqKey(prefixTask, qid, seq) }

// queueTaskSpan covers every move task of source queue qid.
func queueTaskSpan(qid uint64) (lo, hi []byte) { return queueSpan(prefixTask, qid) }

func dedupRecordKey(qid, seq uint64) []byte { return seqKey(prefixDedup, qid, seq) }

// queueDedupSpan covers every deduplication entry of qid.
func queueDedupSpan(qid uint64) (lo, hi []byte) { return queueSpan(prefixDedup, qid) }

func parseTaskKey(k []byte) (qid, seq uint64, ok bool) {
	if len(k) != 17 || k[0] != prefixTask {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:]), true
}

func parseMsgKey(k []byte) (qid, seq uint64, kind byte, ok bool) {
	if len(k) != 18 || k[0] != prefixMsg {
		return 0, 0, 0, false
	}
	return binary.BigEndian.Uint64(k[1:9]), binary.BigEndian.Uint64(k[9:17]), k[17], true
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(b, 0)
	}
	b = append(b, 1)
	return binary.AppendVarint(b, t.UnixNano())
}

func appendMap(b []byte, m map[string]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendString(b, k)
		b = appendString(b, m[k])
	}
	return b
}

// reader decodes a record. Strings are cut from one string copy of the
// record, so a decode costs one allocation however many fields it has.
type reader struct {
	b   []byte
	s   string // same bytes as b when strings are wanted, else ""
	off int
	bad bool
}

func newReader(b []byte, wantStrings bool) reader {
	r := reader{b: b}
	if wantStrings {
		r.s = string(b)
	}
	return r
}

func (r *reader) byte() byte {
	if r.bad || r.off >= len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) uvarint() uint64 {
	if r.bad {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint() int64 {
	if r.bad {
		return 0
	}
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.bad = true
		return 0
	}
	r.off += n
	return v
}

// span returns the bounds of the next length-prefixed field.
func (r *reader) span() (int, int) {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)-r.off) {
		r.bad = true
		return 0, 0
	}
	start := r.off
	r.off += int(n)
	return start, r.off
}

func (r *reader) str() string {
	i, j := r.span()
	if r.s == "" {
		return string(r.b[i:j])
	}
	return r.s[i:j]
}

func (r *reader) bytes() []byte {
	i, j := r.span()
	if r.bad || i == j {
		return nil
	}
	return append([]byte(nil), r.b[i:j]...)
}

func (r *reader) time() time.Time {
	if r.byte() == 0 {
		return time.Time{}
	}
	return fromNanos(r.varint())
}

func (r *reader) strMap() map[string]string {
	n := r.uvarint()
	if r.bad || n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for range n {
		k := r.str()
		m[k] = r.str()
	}
	return m
}

func (r *reader) done() error {
	if r.bad || r.off != len(r.b) {
		return errCorrupt
	}
	return nil
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

// normTime drops location and monotonic reading so that a time reads back
// from the store exactly as it was kept in memory.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return fromNanos(t.UnixNano())
}

func encodeQueue(b []byte, q *engine.Queue) []byte {
	b = append(b, recordVersion3)
	b = appendString(b, q.Account)
	b = appendString(b, q.Name)
	b = appendMap(b, q.Attributes)
	b = appendMap(b, q.Tags)
	s := q.Settings
	b = binary.AppendVarint(b, int64(s.VisibilityTimeout))
	b = binary.AppendVarint(b, int64(s.Delay))
	b = binary.AppendVarint(b, int64(s.Retention))
	b = binary.AppendVarint(b, int64(s.ReceiveWait))
	b = binary.AppendVarint(b, int64(s.MaximumSize))
	b = appendTime(b, q.Created)
	b = appendTime(b, q.Modified)
	b = appendTime(b, q.LastPurge)
	b = appendString(b, q.ARN)
	if rd := s.Redrive; rd != nil {
		b = append(b, 1)
		b = appendString(b, rd.TargetAccount)
		b = appendString(b, rd.TargetName)
		b = binary.AppendVarint(b, int64(rd.MaxReceiveCount))
	} else {
		b = append(b, 0)
	}
	if s.FIFO {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	return appendString(b, s.DeduplicationScope)
}

func decodeQueue(v []byte) (engine.Queue, error) {
	r := newReader(v, true)
	var q engine.Queue
	ver := r.byte()
	if ver < recordVersion || ver > recordVersion3 {
		return q, errCorrupt
	}
	q.Account = r.str()
	q.Name = r.str()
	q.Attributes = r.strMap()
	q.Tags = r.strMap()
	q.Settings.VisibilityTimeout = time.Duration(r.varint())
	q.Settings.Delay = time.Duration(r.varint())
	q.Settings.Retention = time.Duration(r.varint())
	q.Settings.ReceiveWait = time.Duration(r.varint())
	q.Settings.MaximumSize = int(r.varint())
	q.Created = r.time()
	q.Modified = r.time()
	q.LastPurge = r.time()
	if ver >= recordVersion2 {
		q.ARN = r.str()
		switch r.byte() {
		case 0:
		case 1:
			rd := &engine.Redrive{}
			rd.TargetAccount = r.str()
			rd.TargetName = r.str()
			rd.MaxReceiveCount = int(r.varint())
			q.Settings.Redrive = rd
		default:
			return q, errCorrupt
		}
	}
	if ver >= recordVersion3 {
		switch r.byte() {
		case 0:
		case 1:
			q.Settings.FIFO = true
		default:
			return q, errCorrupt
		}
		q.Settings.DeduplicationScope = r.str()
	}
	return q, r.done()
}

// encodeMessage writes the immutable message record. sentAt and the first
// visible-at lead so that startup reads only them (and, on FIFO queues, the
// group id). dlqSource is the queue a redrive moved the message from, if
// any.
func encodeMessage(b []byte, id string, sentAt, visibleAt int64, m *engine.NewMessage, dlqSource string) []byte {
	return encodeMovedMessage(b, id, sentAt, visibleAt, msgEntry{}, m, dlqSource)
}

// msgEntry is how a message entered its queue: moved there by a redrive
// at movedAt with movedReceives receives; the zero value is a send.
type msgEntry struct {
	movedAt       int64
	movedReceives uint32
}

// encodeMovedMessage is encodeMessage for a message that a redrive moves.
func encodeMovedMessage(b []byte, id string, sentAt, visibleAt int64, in msgEntry, m *engine.NewMessage, dlqSource string) []byte {
	// One growth to the record's largest size rather than one per field
	// as append would.
	b = slices.Grow(b, messageRecordCap(len(id), m, len(dlqSource)))
	b = append(b, recordVersion4)
	b = binary.AppendVarint(b, sentAt)
	b = binary.AppendVarint(b, visibleAt)
	var moved int64
	if in.movedAt != 0 {
		moved = in.movedAt - sentAt
	}
	b = binary.AppendVarint(b, moved)
	b = binary.AppendUvarint(b, uint64(in.movedReceives))
	b = appendString(b, id)
	b = appendString(b, m.Body)
	b = appendString(b, m.TraceHeader)
	b = appendString(b, m.MessageGroupID)
	b = appendString(b, m.SenderID)
	b = appendString(b, m.MD5OfBody)
	b = appendString(b, m.MD5OfAttrs)
	b = appendString(b, m.MD5OfSysAttrs)
	b = binary.AppendUvarint(b, uint64(len(m.Attributes)))
	for i := range m.Attributes {
		a := &m.Attributes[i]
		b = appendString(b, a.Name)
		b = appendString(b, a.DataType)
		b = appendString(b, a.StringValue)
		b = appendBytes(b, a.BinaryValue)
	}
	b = appendString(b, dlqSource)
	return appendString(b, m.DeduplicationID)
}

// messageRecordCap bounds the size of encodeMovedMessage's record: its
// strings and a varint of the largest size for every number and length.
func messageRecordCap(idLen int, m *engine.NewMessage, dlqSourceLen int) int {
	const varint = binary.MaxVarintLen64
	n := 1 + 15*varint + idLen + len(m.Body) + len(m.TraceHeader) + len(m.MessageGroupID) +
		len(m.SenderID) + len(m.MD5OfBody) + len(m.MD5OfAttrs) + len(m.MD5OfSysAttrs) +
		dlqSourceLen + len(m.DeduplicationID)
	for i := range m.Attributes {
		a := &m.Attributes[i]
		n += 4*varint + len(a.Name) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

// messageHead reads a message record's version and the fields that
// lead it.
func (r *reader) messageHead() (ver byte, sentAt, visibleAt int64, in msgEntry) {
	ver = r.byte()
	if ver < recordVersion || ver > recordVersion4 {
		r.bad = true
		return
	}
	sentAt = r.varint()
	visibleAt = r.varint()
	if ver >= recordVersion4 {
		if d := r.varint(); d != 0 {
			in.movedAt = sentAt + d
		}
		n := r.uvarint()
		if n > math.MaxUint32 {
			r.bad = true
		}
		in.movedReceives = uint32(n)
	}
	return
}

// decodeMessageHead reads what the memory index needs.
func decodeMessageHead(v []byte) (sentAt, visibleAt int64, in msgEntry, err error) {
	r := newReader(v, false)
	_, sentAt, visibleAt, in = r.messageHead()
	if r.bad {
		return 0, 0, msgEntry{}, errCorrupt
	}
	return sentAt, visibleAt, in, nil
}

// decodeMessageGroup reads a record's message group id, which a FIFO
// queue's index needs at startup. The fields before it are skipped, not
// copied.
func decodeMessageGroup(v []byte) (string, error) {
	r := newReader(v, false)
	r.messageHead()
	for range 3 { // id, body, trace header
		r.span()
	}
	g := r.str()
	if r.bad {
		return "", errCorrupt
	}
	return g, nil
}

func decodeMessage(v []byte, out *engine.Message) error {
	return decodeMessageShared(v, string(v), out, nil)
}

// attrArena hands out the attribute slices of the messages one receive
// decodes from shared allocations; left is how many messages remain to be
// decoded, this one included, to size the next allocation.
type attrArena struct {
	buf  []engine.MessageAttribute
	left int
}

func (a *attrArena) take(n int) []engine.MessageAttribute {
	if a == nil {
		return make([]engine.MessageAttribute, n)
	}
	if cap(a.buf)-len(a.buf) < n {
		a.buf = make([]engine.MessageAttribute, 0, n*max(a.left, 1))
	}
	k := len(a.buf)
	a.buf = a.buf[:k+n]
	// Capped, so that appending to one message's slice cannot overwrite
	// the next one's.
	return a.buf[k : k+n : k+n]
}

// decodeMessageShared is decodeMessage cutting strings from s, a string
// copy of v that may be shared with other records, and attribute slices
// from attrs (nil: allocated), so that a receive of many messages costs a
// few allocations in all rather than a few per message.
func decodeMessageShared(v []byte, s string, out *engine.Message, attrs *attrArena) error {
	r := reader{b: v, s: s}
	// The first visible-at and the entry: the index keeps them.
	ver, sentAt, _, _ := r.messageHead()
	if r.bad {
		return errCorrupt
	}
	out.SentAt = fromNanos(sentAt)
	out.MessageID = r.str()
	out.Body = r.str()
	out.TraceHeader = r.str()
	out.MessageGroupID = r.str()
	out.SenderID = r.str()
	out.MD5OfBody = r.str()
	out.MD5OfAttrs = r.str()
	r.str() // MD5 of system attributes: engine.Message has no field for it
	n := r.uvarint()
	if r.bad || n > uint64(len(v)) {
		return errCorrupt
	}
	if n > 0 {
		out.Attributes = attrs.take(int(n))
		for i := range out.Attributes {
			a := &out.Attributes[i]
			a.Name = r.str()
			a.DataType = r.str()
			a.StringValue = r.str()
			a.BinaryValue = r.bytes()
		}
	}
	if ver >= recordVersion2 {
		out.DeadLetterSourceARN = r.str()
	}
	if ver >= recordVersion3 {
		out.DeduplicationID = r.str()
	}
	return r.done()
}

// storedMessage is a message record read back in full, to be written again
// elsewhere (a redrive or a move task).
type storedMessage struct {
	id        string
	sentAt    int64
	dlqSource string
	msg       engine.NewMessage
}

func decodeStoredMessage(v []byte) (storedMessage, error) {
	var sm storedMessage
	var m engine.Message
	if err := decodeMessage(v, &m); err != nil {
		return sm, err
	}
	sysMD5, err := decodeSysMD5(v)
	if err != nil {
		return sm, err
	}
	sm.id = m.MessageID
	sm.sentAt = m.SentAt.UnixNano()
	sm.dlqSource = m.DeadLetterSourceARN
	sm.msg = engine.NewMessage{
		Body:            m.Body,
		Attributes:      m.Attributes,
		TraceHeader:     m.TraceHeader,
		MessageGroupID:  m.MessageGroupID,
		DeduplicationID: m.DeduplicationID,
		SenderID:        m.SenderID,
		MD5OfBody:       m.MD5OfBody,
		MD5OfAttrs:      m.MD5OfAttrs,
		MD5OfSysAttrs:   sysMD5,
	}
	return sm, nil
}

// decodeSysMD5 reads a message record's digest of the system attributes,
// which engine.Message has no field for, skipping the fields before it.
func decodeSysMD5(v []byte) (string, error) {
	r := newReader(v, false)
	r.messageHead()
	for range 7 {
		r.span()
	}
	sysMD5 := r.str()
	if r.bad {
		return "", errCorrupt
	}
	return sysMD5, nil
}

// msgState is the mutable part of a message, rewritten on every receive and
// visibility change.
type msgState struct {
	receiveCount   uint64
	gen            uint64
	firstReceiveAt int64
	receivedAt     int64
	visibleAt      int64
	// pending: the record ends with the latest receive's story event
	// (appendStateReceive), not yet in the message's history record.
	pending bool
}

func encodeState(b []byte, s msgState) []byte {
	b = append(b, recordVersion)
	b = binary.AppendUvarint(b, s.receiveCount)
	b = binary.AppendUvarint(b, s.gen)
	b = binary.AppendVarint(b, s.firstReceiveAt)
	b = binary.AppendVarint(b, s.receivedAt)
	return binary.AppendVarint(b, s.visibleAt)
}

// appendStateReceive ends a state record with the receive it records:
// the visibility the receive set (a visibility change moves the state's
// own) and its consumer. The receive's time and count are the state's.
func appendStateReceive(b []byte, visibleAt int64, c *engine.Consumer) []byte {
	b = binary.AppendVarint(b, visibleAt)
	b = appendString(b, c.SourceIP)
	b = appendString(b, c.UserAgent)
	return appendString(b, c.AccessKey)
}

// stateReceiveTail is the part of state record v that appendStateReceive
// wrote; nil when it has none.
func stateReceiveTail(v []byte) ([]byte, error) {
	r := newReader(v, false)
	readStateHead(&r)
	if r.bad {
		return nil, errCorrupt
	}
	return v[r.off:], nil
}

func readStateHead(r *reader) msgState {
	var s msgState
	if r.byte() != recordVersion {
		r.bad = true
		return s
	}
	s.receiveCount = r.uvarint()
	s.gen = r.uvarint()
	s.firstReceiveAt = r.varint()
	s.receivedAt = r.varint()
	s.visibleAt = r.varint()
	return s
}

func decodeState(v []byte) (msgState, error) {
	r := newReader(v, false)
	s := readStateHead(&r)
	if !r.bad && r.off < len(r.b) {
		s.pending = true
		r.varint()
		r.span()
		r.span()
		r.span()
	}
	return s, r.done()
}

// decodeStateReceive reads the receive a state record ends with, as a
// story event; ok is false when it ends with none.
func decodeStateReceive(v []byte) (ev engine.HistoryEvent, ok bool, err error) {
	r := newReader(v, true)
	s := readStateHead(&r)
	if r.bad || r.off == len(r.b) {
		return ev, false, r.done()
	}
	ev = engine.HistoryEvent{
		Kind: engine.HistoryReceive, At: fromNanos(s.receivedAt),
		ReceiveCount: int(min(s.receiveCount, math.MaxUint32)), VisibleAt: fromNanos(r.varint()),
	}
	ev.SourceIP, ev.UserAgent, ev.AccessKey = r.str(), r.str(), r.str()
	return ev, true, r.done()
}

// encodeTask writes a move task record; it is rewritten with every batch
// the task moves, in that batch. A task limited to refs writes a version 2
// record, which ends with them; one without stays version 1.
func encodeTask(b []byte, t *engine.MoveTask) []byte {
	ver := recordVersion
	if len(t.Refs) > 0 {
		ver = recordVersion2
	}
	b = append(b, ver)
	b = appendString(b, t.ID)
	b = appendString(b, t.SourceAccount)
	b = appendString(b, t.SourceName)
	b = appendString(b, t.SourceARN)
	b = appendString(b, t.DestinationARN)
	b = binary.AppendVarint(b, int64(t.MaxPerSecond))
	b = appendString(b, string(t.Status))
	b = binary.AppendVarint(b, t.ToMove)
	b = binary.AppendVarint(b, t.Moved)
	b = appendTime(b, t.Started)
	b = appendString(b, string(t.FailureReason))
	if ver == recordVersion {
		return b
	}
	b = binary.AppendUvarint(b, uint64(len(t.Refs)))
	for _, ref := range t.Refs {
		b = appendString(b, ref)
	}
	return b
}

// legacyFailures are the failure reasons as stores written before the
// engine had words of its own kept them (SQS's).
var legacyFailures = map[string]engine.MoveTaskFailure{
	"AWS.SimpleQueueService.NonExistentQueue": engine.MoveTaskFailureNonExistentQueue,
	"AWS.SimpleQueueService.MoveTaskTimedOut": engine.MoveTaskFailureTimedOut,
	"AWS.SimpleQueueService.InternalError":    engine.MoveTaskFailureStore,
}

func decodeFailure(s string) engine.MoveTaskFailure {
	if f, ok := legacyFailures[s]; ok {
		return f
	}
	return engine.MoveTaskFailure(s)
}

func decodeTask(v []byte) (engine.MoveTask, error) {
	r := newReader(v, true)
	var t engine.MoveTask
	ver := r.byte()
	if ver != recordVersion && ver != recordVersion2 {
		return t, errCorrupt
	}
	t.ID = r.str()
	t.SourceAccount = r.str()
	t.SourceName = r.str()
	t.SourceARN = r.str()
	t.DestinationARN = r.str()
	t.MaxPerSecond = int(r.varint())
	t.Status = engine.MoveTaskStatus(r.str())
	t.ToMove = r.varint()
	t.Moved = r.varint()
	t.Started = r.time()
	t.FailureReason = decodeFailure(r.str())
	if ver == recordVersion2 {
		n := r.uvarint()
		if r.bad || n == 0 || n > uint64(len(v)) {
			return t, errCorrupt
		}
		t.Refs = make([]string, n)
		for i := range t.Refs {
			t.Refs[i] = r.str()
		}
	}
	if err := r.done(); err != nil {
		return t, err
	}
	switch t.Status {
	case engine.MoveTaskRunning, engine.MoveTaskCompleted, engine.MoveTaskCancelling,
		engine.MoveTaskCancelled, engine.MoveTaskFailed:
	default:
		return t, errCorrupt
	}
	return t, nil
}

// dedupRecord is a FIFO deduplication entry as stored: it outlives its
// message (the window runs from the first send whatever becomes of it).
type dedupRecord struct {
	sentAt    int64
	group     string // empty in queue scope
	dedupID   string
	messageID string
}

func encodeDedup(b []byte, d *dedupRecord) []byte {
	b = append(b, recordVersion)
	b = binary.AppendVarint(b, d.sentAt)
	b = appendString(b, d.group)
	b = appendString(b, d.dedupID)
	return appendString(b, d.messageID)
}

func decodeDedup(v []byte) (dedupRecord, error) {
	r := newReader(v, true)
	var d dedupRecord
	if r.byte() != recordVersion {
		return d, errCorrupt
	}
	d.sentAt = r.varint()
	d.group = r.str()
	d.dedupID = r.str()
	d.messageID = r.str()
	return d, r.done()
}
