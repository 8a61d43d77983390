package filterpolicy

import (
	"bytes"
	"strconv"
	"strings"
)

// ---- Rules ----

// ruleSet is a conjunction: every leaf matches and, for each $or group, at
// least one alternative does.
type ruleSet struct {
	leaves []leafRule
	ors    [][]*ruleSet
}

// leafRule is a field and its values; any value matching is enough.
type leafRule struct {
	path  string
	depth int // object nesting of the key, 1 at the top
	pats  []pattern
}

type patKind uint8

const (
	patString     patKind = iota // exact string; IP literals also match equal addresses
	patLiteral                   // true, false or null
	patNumber                    // exact number: equal value, or the same literal
	patNumEq                     // numeric "="
	patRange                     // numeric <, <=, >, >= and ranges
	patPrefix                    // prefix
	patSuffix                    // suffix
	patIgnoreCase                // equals-ignore-case
	patWildcard                  // wildcard
	patNotStrings                // anything-but strings
	patNotNumbers                // anything-but numbers
	patNotPrefix                 // anything-but prefix
	patExists                    // exists: true
	patAbsent                    // exists: false
	patCIDR                      // cidr
)

type pattern struct {
	kind   patKind
	s      string
	ip     []byte // patString: the address s spells, if any; patCIDR: lowest address
	ipHi   []byte // patCIDR: highest address
	q, q2  int64  // comparable numbers: the value, or the range's bottom and top
	qok    bool   // patNumber: q is set
	openLo bool
	openHi bool
	strs   map[string]struct{}
	nums   map[int64]struct{}
	glob   []string // patWildcard: the literal runs around each '*'
}

type evKind uint8

const (
	evString evKind = iota
	evNumber
	evLiteral // true, false, null
)

// evValue is one value of a message field.
type evValue struct {
	kind evKind
	text string // the string, or the JSON literal
	q    int64
	qok  bool // q holds the number's comparable form
}

// event maps a field's dot-joined path to its values.
type event map[string][]evValue

func nodeValue(n *jnode) evValue {
	switch n.kind {
	case jString:
		return evValue{kind: evString, text: n.text}
	case jInt, jFloat:
		v := evValue{kind: evNumber, text: n.text}
		if f, err := strconv.ParseFloat(n.text, 64); err == nil {
			v.q, v.qok = comparable(f)
		}
		return v
	case jTrue:
		return evValue{kind: evLiteral, text: "true"}
	case jFalse:
		return evValue{kind: evLiteral, text: "false"}
	}
	return evValue{kind: evLiteral, text: "null"}
}

func (rs *ruleSet) match(ev event) bool {
	for i := range rs.leaves {
		if !rs.leaves[i].match(ev[rs.leaves[i].path]) {
			return false
		}
	}
	for _, group := range rs.ors {
		ok := false
		for _, alt := range group {
			if alt.match(ev) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func (l *leafRule) match(vals []evValue) bool {
	for i := range l.pats {
		p := &l.pats[i]
		switch p.kind {
		case patExists:
			if len(vals) > 0 {
				return true
			}
		case patAbsent:
			if len(vals) == 0 {
				return true
			}
		default:
			for j := range vals {
				if p.matchValue(&vals[j]) {
					return true
				}
			}
		}
	}
	return false
}

func (p *pattern) matchValue(v *evValue) bool {
	switch p.kind {
	case patString:
		if v.kind != evString {
			return false
		}
		if v.text == p.s {
			return true
		}
		if p.ip == nil {
			return false
		}
		ip, ok := parseIPLiteral(v.text)
		return ok && bytes.Equal(ip, p.ip)
	case patLiteral:
		return v.kind == evLiteral && v.text == p.s
	case patNumber:
		return v.kind == evNumber && (p.qok && v.qok && v.q == p.q || v.text == p.s)
	case patNumEq:
		return v.kind == evNumber && v.qok && v.q == p.q
	case patRange:
		if v.kind != evNumber || !v.qok {
			return false
		}
		if v.q < p.q || p.openLo && v.q == p.q {
			return false
		}
		return v.q < p.q2 || !p.openHi && v.q == p.q2
	case patPrefix:
		return v.kind == evString && strings.HasPrefix(v.text, p.s)
	case patSuffix:
		return v.kind == evString && strings.HasSuffix(v.text, p.s)
	case patIgnoreCase:
		return v.kind == evString && strings.EqualFold(v.text, p.s)
	case patWildcard:
		return v.kind == evString && globMatch(p.glob, v.text)
	case patNotStrings:
		if v.kind != evString {
			return true
		}
		_, found := p.strs[v.text]
		return !found
	case patNotNumbers:
		if v.kind != evNumber || !v.qok {
			return true
		}
		_, found := p.nums[v.q]
		return !found
	case patNotPrefix:
		return v.kind != evString || !strings.HasPrefix(v.text, p.s)
	case patCIDR:
		if v.kind != evString {
			return false
		}
		ip, ok := parseIPLiteral(v.text)
		return ok && len(ip) == len(p.ip) && bytes.Compare(ip, p.ip) >= 0 && bytes.Compare(ip, p.ipHi) <= 0
	}
	return false
}

// nested reports whether any key sits below the top level.
func (rs *ruleSet) nested() bool {
	for _, l := range rs.leaves {
		if l.depth > 1 {
			return true
		}
	}
	for _, group := range rs.ors {
		for _, alt := range group {
			if alt.nested() {
				return true
			}
		}
	}
	return false
}

// keys is the largest number of fields any $or alternative ends up with.
func (rs *ruleSet) keys() int {
	n := len(rs.leaves)
	for _, group := range rs.ors {
		most := 0
		for _, alt := range group {
			most = max(most, alt.keys())
		}
		n += most
	}
	return n
}

// combinations counts as AWS documents: the product over fields of
// (values × nesting depth); $or alternatives add up. The count saturates
// just above the limit.
func (rs *ruleSet) combinations() int {
	const ceiling = maxCombinations + 1
	n := 1
	for _, l := range rs.leaves {
		n = min(n*min(len(l.pats)*l.depth, ceiling), ceiling)
	}
	for _, group := range rs.ors {
		sum := 0
		for _, alt := range group {
			sum = min(sum+alt.combinations(), ceiling)
		}
		n = min(n*sum, ceiling)
	}
	return n
}

func (rs *ruleSet) collectPaths(paths map[string]uint8) {
	for _, l := range rs.leaves {
		paths[l.path] |= pathLeaf
		for i := 0; i < len(l.path); i++ {
			if l.path[i] == '.' {
				paths[l.path[:i]] |= pathPrefix
			}
		}
	}
	for _, group := range rs.ors {
		for _, alt := range group {
			alt.collectPaths(paths)
		}
	}
}
