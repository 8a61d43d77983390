package filterpolicy

import (
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
)

// ---- Compiling (event-ruler's JSON rule compiler) ----

// rulerReserved are names event-ruler refuses as keys inside $or.
var rulerReserved = map[string]bool{
	"exactly": true, "equals-ignore-case": true, "prefix": true, "suffix": true,
	"anything-but": true, "exists": true, "wildcard": true, "numeric": true, "cidr": true,
	"=": true, "<": true, "<=": true, ">": true, ">=": true,
	"regex": true, "not-wildcard": true, "not-equals-ignore-case": true,
	"date-after": true, "date-on-or-after": true, "date-before": true, "date-on-or-before": true,
	"in-date-range": true, "ip-address-in-range": true, "ip-address-not-in-range": true,
}

type compiler struct {
	lx *ruleLexer
	// deferred holds the first wildcard syntax error: the library finds
	// those only when the compiled rule is added, after the whole walk.
	deferred error
}

func compileRules(text string) (*ruleSet, error) {
	c := &compiler{lx: &ruleLexer{s: text}}
	if c.lx.next() != tkStartObject {
		return nil, c.fail("Filter is not an object")
	}
	root := &ruleSet{}
	if err := c.object(root, nil, false); err != nil {
		return nil, err
	}
	if c.deferred != nil {
		return nil, c.deferred
	}
	return root, nil
}

// fail is an error at the parser's current location.
func (c *compiler) fail(msg string) error {
	return &Error{Reason: "FilterPolicy: " + msg + "\n at " + jsonLocation(1, c.lx.col())}
}

// failRethrown is an error the library raises inside a handler that
// catches it and raises it again, so its location appears twice.
func (c *compiler) failRethrown(msg string) error {
	loc := "\n at " + jsonLocation(1, c.lx.col())
	return &Error{Reason: "FilterPolicy: " + msg + loc + loc}
}

// failBare is an error the library raises without a location.
func failBare(msg string) error {
	return &Error{Reason: "FilterPolicy: " + msg}
}

func joinPath(path []string, name string) string {
	if len(path) == 0 {
		return name
	}
	return strings.Join(path, ".") + "." + name
}

// object reads the members of an object whose '{' has been read.
func (c *compiler) object(rs *ruleSet, path []string, inOr bool) error {
	fields := false
	for {
		if t := c.lx.next(); t == tkEndObject || t == tkNone {
			break
		}
		fields = true
		name := c.lx.name
		if name == "$or" {
			if err := c.or(rs, path); err != nil {
				return err
			}
			continue
		}
		if inOr && rulerReserved[name] {
			return c.fail(name + " is Ruler reserved fieldName which cannot be used inside $or.")
		}
		switch c.lx.next() {
		case tkStartObject:
			if err := c.object(rs, append(path[:len(path):len(path)], name), inOr); err != nil {
				return err
			}
		case tkStartArray:
			pats, err := c.values()
			if err != nil {
				return err
			}
			rs.leaves = append(rs.leaves, leafRule{path: joinPath(path, name), depth: len(path) + 1, pats: pats})
		default:
			return c.fail("\"" + name + "\" must be an object or an array")
		}
	}
	if !fields {
		return c.fail("Empty objects are not allowed")
	}
	return nil
}

func (c *compiler) or(rs *ruleSet, path []string) error {
	if c.lx.next() != tkStartArray {
		return c.fail("It must be an Array followed with $or.")
	}
	var group []*ruleSet
	for {
		t := c.lx.next()
		if t == tkEndArray {
			break
		}
		if t != tkStartObject {
			return c.fail("Only JSON object is allowed in array of $or relationship.")
		}
		alt := &ruleSet{}
		if err := c.object(alt, path, true); err != nil {
			return err
		}
		group = append(group, alt)
	}
	if len(group) < 2 {
		return c.fail("There must have at least 2 Objects in $or relationship.")
	}
	rs.ors = append(rs.ors, group)
	return nil
}

// values reads the match values of a field, its '[' read.
func (c *compiler) values() ([]pattern, error) {
	var pats []pattern
	for {
		t := c.lx.next()
		if t == tkEndArray {
			break
		}
		switch t {
		case tkStartObject:
			p, err := c.matchExpression()
			if err != nil {
				return nil, err
			}
			pats = append(pats, p)
		case tkString:
			s := c.lx.text()
			p := pattern{kind: patString, s: s}
			if isIPLike(s) {
				p.ip, _ = parseIPLiteral(s)
			}
			pats = append(pats, p)
		case tkInt, tkFloat:
			p := pattern{kind: patNumber, s: c.lx.lit}
			p.q, p.qok = comparable(c.lx.double())
			pats = append(pats, p)
		case tkTrue, tkFalse, tkNull:
			pats = append(pats, pattern{kind: patLiteral, s: c.lx.lit})
		default:
			return nil, c.fail("Match value must be String, number, true, false, or null")
		}
	}
	if len(pats) == 0 {
		return nil, c.fail("Empty arrays are not allowed")
	}
	return pats, nil
}

// matchExpression reads an operator object, its '{' read.
func (c *compiler) matchExpression() (pattern, error) {
	if c.lx.next() != tkFieldName {
		return pattern{}, c.fail("Match expression name not found")
	}
	op := c.lx.name
	switch op {
	case "exactly", "prefix", "suffix", "equals-ignore-case", "wildcard":
		if c.lx.next() != tkString {
			what := op
			if op == "exactly" {
				what = "exact"
			}
			return pattern{}, c.fail(what + " match pattern must be a string")
		}
		s := c.lx.text()
		p := pattern{s: s}
		switch op {
		case "exactly":
			p.kind = patString
		case "prefix":
			p.kind = patPrefix
		case "suffix":
			p.kind = patSuffix
		case "equals-ignore-case":
			p.kind = patIgnoreCase
		case "wildcard":
			p.kind = patWildcard
			glob, err := parseWildcard(s)
			if err != nil && c.deferred == nil {
				c.deferred = failBare(err.Error())
			}
			p.glob = glob
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Only one key allowed in match expression")
		}
		return p, nil
	case "numeric":
		if c.lx.next() != tkStartArray {
			return pattern{}, c.fail("Value of numeric must be an array.")
		}
		p, err := c.numeric()
		if err != nil {
			return pattern{}, err
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Too many elements in numeric expression")
		}
		return p, nil
	case "anything-but":
		return c.anythingBut()
	case "exists":
		var p pattern
		switch c.lx.next() {
		case tkTrue:
			p.kind = patExists
		case tkFalse:
			p.kind = patAbsent
		default:
			return pattern{}, c.fail("exists match pattern must be either true or false.")
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Only one key allowed in match expression")
		}
		return p, nil
	case "cidr":
		if c.lx.next() != tkString {
			// The library's wording for this case.
			return pattern{}, c.fail("prefix match pattern must be a string")
		}
		lo, hi, msg := parseCIDR(c.lx.text())
		if msg != "" {
			return pattern{}, failBare(msg)
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Only one key allowed in match expression")
		}
		return pattern{kind: patCIDR, ip: lo, ipHi: hi}, nil
	}
	return pattern{}, c.fail("Unrecognized match type " + op)
}

func isNumberToken(t rtok) bool { return t == tkInt || t == tkFloat }

// numeric reads a numeric expression, its '[' read.
func (c *compiler) numeric() (pattern, error) {
	if c.lx.next() != tkString {
		return pattern{}, c.fail("Invalid member in numeric match: " + c.lx.text())
	}
	op := c.lx.text()
	t := c.lx.next()
	switch op {
	case "=":
		if !isNumberToken(t) {
			return pattern{}, c.fail("Value of equals must be numeric")
		}
		v := c.lx.double()
		if c.lx.next() != tkEndArray {
			return pattern{}, c.fail("Too many elements in numeric expression")
		}
		q, ok := comparable(v)
		if !ok {
			return pattern{}, c.fail(numberRangeMessage)
		}
		return pattern{kind: patNumEq, q: q}, nil
	case ">", ">=":
		if !isNumberToken(t) {
			return pattern{}, c.fail("Value of " + op + " must be numeric")
		}
		bottom := c.lx.double()
		if t = c.lx.next(); t == tkEndArray {
			return c.numericRange(bottom, op == ">", numberLimit, false)
		}
		if t != tkString {
			return pattern{}, c.fail("Bad value in numeric range: " + c.lx.text())
		}
		topOp := c.lx.text()
		if topOp != "<" && topOp != "<=" {
			return pattern{}, c.fail("Bad numeric range operator: " + topOp)
		}
		if !isNumberToken(c.lx.next()) {
			return pattern{}, c.fail("Value of " + topOp + " must be numeric")
		}
		top := c.lx.double()
		if c.lx.next() != tkEndArray {
			return pattern{}, c.fail("Too many terms in numeric range expression")
		}
		return c.numericRange(bottom, op == ">", top, topOp == "<")
	case "<", "<=":
		if !isNumberToken(t) {
			return pattern{}, c.fail("Value of " + op + " must be numeric")
		}
		top := c.lx.double()
		if c.lx.next() != tkEndArray {
			return pattern{}, c.fail("Too many elements in numeric expression")
		}
		return c.numericRange(-numberLimit, false, top, op == "<")
	}
	return pattern{}, c.fail("Unrecognized numeric range operator: " + op)
}

func (c *compiler) numericRange(bottom float64, openLo bool, top float64, openHi bool) (pattern, error) {
	if bottom >= top {
		return pattern{}, c.fail("Bottom must be less than top")
	}
	lo, ok1 := comparable(bottom)
	hi, ok2 := comparable(top)
	if !ok1 || !ok2 {
		return pattern{}, c.fail(numberRangeMessage)
	}
	return pattern{kind: patRange, q: lo, q2: hi, openLo: openLo, openHi: openHi}, nil
}

// anythingBut reads the value of anything-but and the close of its object.
func (c *compiler) anythingBut() (pattern, error) {
	t := c.lx.next()
	if t == tkStartObject {
		if c.lx.next() != tkFieldName {
			return pattern{}, c.fail("Anything-But expression name not found")
		}
		if op := c.lx.name; op != "prefix" {
			return pattern{}, c.fail("Unsupported anything-but pattern: " + op)
		}
		if c.lx.next() != tkString {
			return pattern{}, c.fail("prefix match pattern must be a string")
		}
		s := c.lx.text()
		if s == "" {
			return pattern{}, c.fail("Null prefix not allowed")
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Only one key allowed in match expression")
		}
		if c.lx.next() != tkEndObject {
			return pattern{}, c.fail("Only one key allowed in match expression")
		}
		return pattern{kind: patNotPrefix, s: s}, nil
	}
	var p pattern
	switch t {
	case tkStartArray:
		strs := map[string]struct{}{}
		nums := map[int64]struct{}{}
		for {
			t := c.lx.next()
			if t == tkEndArray {
				break
			}
			switch t {
			case tkString:
				strs[c.lx.text()] = struct{}{}
			case tkInt, tkFloat:
				q, ok := comparable(c.lx.double())
				if !ok {
					return pattern{}, c.fail(numberRangeMessage)
				}
				nums[q] = struct{}{}
			default:
				return pattern{}, c.failRethrown("Inside anything but list, start|null|boolean is not supported.")
			}
		}
		if (len(strs) > 0) == (len(nums) > 0) {
			return pattern{}, c.fail("Inside anything but list, either all values are number or string, mixed type is not supported")
		}
		if len(nums) > 0 {
			p = pattern{kind: patNotNumbers, nums: nums}
		} else {
			p = pattern{kind: patNotStrings, strs: strs}
		}
	case tkString:
		p = pattern{kind: patNotStrings, strs: map[string]struct{}{c.lx.text(): {}}}
	case tkInt, tkFloat:
		q, ok := comparable(c.lx.double())
		if !ok {
			return pattern{}, failBare(numberRangeMessage)
		}
		p = pattern{kind: patNotNumbers, nums: map[int64]struct{}{q: {}}}
	default:
		return pattern{}, c.fail("Value of anything-but must be an array or single string/number value.")
	}
	if c.lx.next() != tkEndObject {
		return pattern{}, c.fail("Too many elements in numeric expression")
	}
	return p, nil
}

// ---- Numbers ----

const numberRangeMessage = "Value must be between -5.0E9 and 5.0E9, inclusive"

// comparable maps f into event-ruler's comparable form, fixed point with
// six decimal places (truncated), if f is within the library's range.
func comparable(f float64) (int64, bool) {
	if !(f >= -numberLimit && f <= numberLimit) {
		return 0, false
	}
	shifted := numberLimit + f
	return int64(1e6 * shifted), true
}

// javaDouble formats f as Java's Double.toString does (shortest digits;
// plain between 1e-3 and 1e7, else d.dddEn).
func javaDouble(f float64) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	if a := math.Abs(f); a >= 1e-3 && a < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// ---- IP addresses ----

// isIPLike applies event-ruler's tests for an IPv4 or IPv6 literal.
func isIPLike(s string) bool { return isIPv4Like(s) || isIPv6Like(s) }

// isIPv4Like: four runs of digits joined by dots.
func isIPv4Like(s string) bool {
	parts := 0
	run := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			run++
		case c == '.' && run > 0:
			parts++
			run = 0
		default:
			return false
		}
	}
	return run > 0 && parts == 3
}

// isIPv6Like: hex digits and colons, at least one colon.
func isIPv6Like(s string) bool {
	colon := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ':':
			colon = true
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f', c >= 'A' && c <= 'F':
		default:
			return false
		}
	}
	return colon
}

// parseIPLiteral reads an address as Java's InetAddress does for strings
// that look like one: 4 bytes for IPv4 (and IPv4-mapped IPv6), else 16.
func parseIPLiteral(s string) ([]byte, bool) {
	if isIPv4Like(s) {
		out := make([]byte, 4)
		for i, part := range strings.Split(s, ".") {
			v := 0
			for j := 0; j < len(part); j++ {
				v = v*10 + int(part[j]-'0')
				if v > 255 {
					return nil, false
				}
			}
			out[i] = byte(v)
		}
		return out, true
	}
	if !isIPv6Like(s) {
		return nil, false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return nil, false
	}
	if a.Is4In6() {
		b := a.Unmap().As4()
		return b[:], true
	}
	b := a.As16()
	return b[:], true
}

// parseCIDR reads a cidr operand, returning its lowest and highest address
// or the library's error text.
func parseCIDR(s string) (lo, hi []byte, msg string) {
	parts := javaSplitSlash(s)
	if len(parts) != 2 {
		return nil, nil, "Malformed CIDR, one '/' required"
	}
	bits, ok := javaParseInt(parts[1])
	if !ok {
		return nil, nil, "Malformed CIDR, mask bits must be an integer"
	}
	if bits < 0 {
		return nil, nil, "Malformed CIDR, mask bits must not be negative"
	}
	if !isIPLike(parts[0]) {
		return nil, nil, "Nonstandard IP address: " + parts[0]
	}
	ip, ok := parseIPLiteral(parts[0])
	if !ok {
		return nil, nil, "Invalid IP address: " + parts[0]
	}
	if len(ip) == 4 && bits > 31 {
		return nil, nil, "IPv4 mask bits must be < 32"
	}
	if len(ip) == 16 && bits > 127 {
		return nil, nil, "IPv6 mask bits must be < 128"
	}
	lo = make([]byte, len(ip))
	hi = make([]byte, len(ip))
	for i := range ip {
		keep := min(max(bits-8*i, 0), 8) // network bits in this byte
		mask := byte(0xFF << (8 - keep))
		lo[i] = ip[i] & mask
		hi[i] = ip[i] | ^mask
	}
	return lo, hi, ""
}

// javaSplitSlash splits as Java's String.split("/") does: trailing empty
// parts are dropped.
func javaSplitSlash(s string) []string {
	if !strings.Contains(s, "/") {
		return []string{s}
	}
	parts := strings.Split(s, "/")
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// javaParseInt accepts what Integer.parseInt accepts in ASCII.
func javaParseInt(s string) (int, bool) {
	i, neg := 0, false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, i = s[0] == '-', 1
	}
	if i == len(s) {
		return 0, false
	}
	v := int64(0)
	for ; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
		if v > math.MaxInt32+1 {
			return 0, false
		}
	}
	if neg {
		v = -v
	}
	if v > math.MaxInt32 {
		return 0, false
	}
	return int(v), true
}

// ---- Wildcards ----

// parseWildcard splits a wildcard pattern at its '*'s; "\*" and "\\" are
// literal. Error positions count bytes of the quoted value, as the library's.
func parseWildcard(s string) ([]string, error) {
	var (
		runs []string
		cur  strings.Builder
	)
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				return nil, fmt.Errorf("Consecutive wildcard characters at pos %d", i+1)
			}
			runs = append(runs, cur.String())
			cur.Reset()
		case '\\':
			if i+1 < len(s) && (s[i+1] == '*' || s[i+1] == '\\') {
				cur.WriteByte(s[i+1])
				i++
				continue
			}
			return nil, fmt.Errorf("Invalid escape character at pos %d", i+1)
		default:
			cur.WriteByte(s[i])
		}
	}
	return append(runs, cur.String()), nil
}

// globMatch matches s against literal runs separated by '*'.
func globMatch(runs []string, s string) bool {
	if len(runs) == 1 {
		return s == runs[0]
	}
	first, last := runs[0], runs[len(runs)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, run := range runs[1 : len(runs)-1] {
		i := strings.Index(s, run)
		if i < 0 {
			return false
		}
		s = s[i+len(run):]
	}
	return true
}
