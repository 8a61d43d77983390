package bench

import (
	"strconv"
	"strings"
	"time"
)

// BodySize is the size of every message body the scenarios send.
const BodySize = 256

// padding fills bodies up to BodySize.
var padding = strings.Repeat(".", BodySize)

// Stamp is what a body carries: which run and message it is, its place in
// its group (FIFO) and when its send began.
type Stamp struct {
	Run   string
	Seq   uint64
	Group string // "" when the message has none
	Index uint64 // position within Group
	Sent  time.Time
}

// Body renders s as a unique body of BodySize bytes (longer only if the run
// and group names are absurdly long).
func (s Stamp) Body() string {
	var b strings.Builder
	b.Grow(BodySize)
	b.WriteString("ferry-bench ")
	b.WriteString(s.Run)
	b.WriteByte(' ')
	b.WriteString(strconv.FormatUint(s.Seq, 10))
	b.WriteByte(' ')
	if s.Group == "" {
		b.WriteByte('-')
	} else {
		b.WriteString(s.Group)
	}
	b.WriteByte(' ')
	b.WriteString(strconv.FormatUint(s.Index, 10))
	b.WriteByte(' ')
	b.WriteString(strconv.FormatInt(s.Sent.UnixNano(), 10))
	b.WriteByte(' ')
	if n := BodySize - b.Len(); n > 0 {
		b.WriteString(padding[:n])
	}
	return b.String()
}

// ParseBody reads a body written by Stamp.Body for run. It reports false
// for anything else: another run's message, or a body the broker mangled.
func ParseBody(run, body string) (Stamp, bool) {
	f := strings.Fields(body)
	switch {
	case len(f) == 7 && len(body) == BodySize && strings.Trim(f[6], ".") == "":
	case len(f) == 6 && len(body) >= BodySize: // no room was left for padding
	default:
		return Stamp{}, false
	}
	if f[0] != "ferry-bench" || f[1] != run {
		return Stamp{}, false
	}
	seq, err1 := strconv.ParseUint(f[2], 10, 64)
	idx, err2 := strconv.ParseUint(f[4], 10, 64)
	ns, err3 := strconv.ParseInt(f[5], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return Stamp{}, false
	}
	s := Stamp{Run: run, Seq: seq, Index: idx, Sent: time.Unix(0, ns)}
	if f[3] != "-" {
		s.Group = f[3]
	}
	return s, true
}
