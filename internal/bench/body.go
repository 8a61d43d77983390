package bench

import (
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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
	return string(s.AppendBody(make([]byte, 0, BodySize)))
}

// AppendBody appends the body of s (see Body) to b.
func (s Stamp) AppendBody(b []byte) []byte {
	start := len(b)
	b = append(b, "ferry-bench "...)
	b = append(b, s.Run...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, s.Seq, 10)
	b = append(b, ' ')
	if s.Group == "" {
		b = append(b, '-')
	} else {
		b = append(b, s.Group...)
	}
	b = append(b, ' ')
	b = strconv.AppendUint(b, s.Index, 10)
	b = append(b, ' ')
	b = strconv.AppendInt(b, s.Sent.UnixNano(), 10)
	b = append(b, ' ')
	if n := BodySize - (len(b) - start); n > 0 {
		b = append(b, padding[:n]...)
	}
	return b
}

// ParseBody reads a body written by Stamp.Body for run. It reports false
// for anything else: another run's message, or a body the broker mangled.
func ParseBody(run, body string) (Stamp, bool) {
	var fs [7]string
	n, ok := fields(body, fs[:])
	f := fs[:n]
	switch {
	case !ok:
		return Stamp{}, false
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

// fields splits s around runs of white space as strings.Fields does, into
// f without allocating; it reports false when s has more fields than f
// holds.
func fields(s string, f []string) (int, bool) {
	n, start := 0, -1
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
		}
		if unicode.IsSpace(r) {
			if start >= 0 {
				if n == len(f) {
					return n, false
				}
				f[n], n, start = s[start:i], n+1, -1
			}
		} else if start < 0 {
			start = i
		}
		i += w
	}
	if start >= 0 {
		if n == len(f) {
			return n, false
		}
		f[n], n = s[start:], n+1
	}
	return n, true
}
