// Package filterpolicy is the language of SNS subscription filter
// policies (the FilterPolicy and FilterPolicyScope subscription
// attributes, sns.md §9): Parse validates a policy as SNS does and
// compiles it, and a Policy evaluates a message's attributes or body.
//
// AWS's answers show how SNS reads a filter policy: Jackson parses it into
// a tree that is written back compactly, and AWS's event-ruler library (its
// 1.0.x texts and its anything-but, numeric and cidr rules) compiles that
// rewrite. This package follows both steps so that errors carry AWS's text
// and Jackson's location ("line: 1, column: N", counted in the rewrite).
// Matching follows the library: paths are dot-joined, arrays are
// transparent, and every value keeps its JSON type.
package filterpolicy

import (
	"bytes"
	"fmt"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ferrymq/ferry/internal/sns/snsjson"
)

// Filter policy scopes (the FilterPolicyScope subscription attribute).
const (
	ScopeMessageAttributes = "MessageAttributes"
	ScopeMessageBody       = "MessageBody"
)

// Limits of a filter policy.
const (
	maxPolicyBytes   = 256 * 1024
	maxPolicyKeys    = 5
	maxCombinations  = 150
	maxJSONNesting   = 1000 // Jackson's StreamReadConstraints defaults
	maxNumberLength  = 1000
	maxErrorTokenLen = 256
	// numberLimit bounds the numbers event-ruler can compare; numbers are
	// compared to six decimal places. (AWS documents ±1e9 with five; the
	// library accepts this wider range.)
	numberLimit = 5e9
)

// Attribute is a message attribute as published.
type Attribute struct {
	DataType    string
	StringValue string
	BinaryValue []byte
}

// Error is a policy SNS rejects. Error() is the message
// SetSubscriptionAttributes answers with (code InvalidParameter, HTTP 400).
type Error struct {
	// Reason follows "Invalid parameter: ", for example
	// "FilterPolicy: Filter policy is too complex".
	Reason string
}

func (e *Error) Error() string { return "Invalid parameter: " + e.Reason }

// SubscribeMessage is the message Subscribe answers with for the same policy.
func (e *Error) SubscribeMessage() string {
	return "Invalid parameter: Attributes Reason: " + e.Reason
}

// Policy is a compiled subscription filter policy. A nil policy, and
// the empty policy {}, let every message through.
type Policy struct {
	scope string
	root  *ruleSet // nil for {}
	// paths flags every leaf path of the policy and each of its dot-prefixes,
	// so that building a message's fields skips what the policy never reads.
	paths map[string]uint8
}

const (
	pathLeaf   uint8 = 1
	pathPrefix uint8 = 2
)

// Parse validates raw as SNS does for scope ("" means MessageAttributes)
// and compiles it. Errors are *Error.
func Parse(raw, scope string) (*Policy, error) {
	if scope == "" {
		scope = ScopeMessageAttributes
	} else if err := CheckScope(scope); err != nil {
		return nil, err
	}
	if len(raw) > maxPolicyBytes {
		// The limit is documented; this wording is not recorded from AWS.
		return nil, &Error{Reason: "FilterPolicy: Filter policy is too large"}
	}
	tree, jerr := parseJSON(raw, true)
	if jerr != nil {
		return nil, &Error{Reason: "FilterPolicy: failed to parse JSON. " + jerr.Error()}
	}
	p := &Policy{scope: scope}
	if tree.kind == jObject && len(tree.keys) == 0 {
		return p, nil // {} removes filtering
	}
	root, err := compileRules(string(appendCompact(nil, tree)))
	if err != nil {
		return nil, err
	}
	if scope == ScopeMessageAttributes && root.nested() {
		return nil, &Error{Reason: "Filter policy scope MessageAttributes does not support nested filter policy"}
	}
	// Keys are counted as the compiled rule has them: the fields (leaf
	// paths) of each $or alternative. AWS's documents are ambiguous here.
	if root.keys() > maxPolicyKeys {
		return nil, &Error{Reason: "FilterPolicy: Filter policy can not have more than 5 keys"}
	}
	if root.combinations() > maxCombinations {
		return nil, &Error{Reason: "FilterPolicy: Filter policy is too complex"}
	}
	p.root = root
	p.paths = make(map[string]uint8)
	root.collectPaths(p.paths)
	return p, nil
}

// CheckScope validates a FilterPolicyScope value. Errors are *Error.
func CheckScope(scope string) error {
	if scope != ScopeMessageAttributes && scope != ScopeMessageBody {
		return &Error{Reason: "FilterPolicyScope: Invalid value [" + scope +
			"]. Please use either MessageBody or MessageAttributes"}
	}
	return nil
}

// Scope is the scope the policy was parsed for.
func (p *Policy) Scope() string {
	if p == nil {
		return ScopeMessageAttributes
	}
	return p.scope
}

// Result is what a policy made of a message: it passed, or why not.
type Result uint8

// Filter results. The reasons other than NoMatch are the ones
// CloudWatch counts apart (NumberOfNotificationsFilteredOut-…).
const (
	Pass Result = iota
	// NoMatch: the message's values do not match the policy.
	NoMatch
	// NoAttributes: attribute scope, and the message has none.
	NoAttributes
	// InvalidAttributes: attribute scope, and an attribute the
	// policy reads is malformed (a String.Array that is not a JSON array,
	// a Number that is not a number).
	InvalidAttributes
	// InvalidBody: body scope, and the body is not a JSON object.
	InvalidBody
)

// Match applies the policy to the part of the message its scope names.
func (p *Policy) Match(body string, attrs map[string]Attribute) bool {
	return p.Evaluate(body, attrs) == Pass
}

// Evaluate applies the policy to the part of the message its scope names
// and tells why a message did not pass.
func (p *Policy) Evaluate(body string, attrs map[string]Attribute) Result {
	if p.Scope() == ScopeMessageBody {
		return p.evaluateBody(body)
	}
	return p.evaluateAttributes(attrs)
}

// MatchAttributes reports whether message attributes pass the policy.
// String and Number attributes are single values, String.Array (and
// Number.Array, which AWS's examples use) JSON arrays whose elements each
// count; Binary attributes take no part. A String.Array that is not a JSON
// array, or a Number that is not a number, fails the message.
func (p *Policy) MatchAttributes(attrs map[string]Attribute) bool {
	return p.evaluateAttributes(attrs) == Pass
}

func (p *Policy) evaluateAttributes(attrs map[string]Attribute) Result {
	if p == nil || p.root == nil {
		return Pass
	}
	ev := make(event)
	for name, a := range attrs {
		flags := p.paths[name]
		if flags == 0 {
			continue
		}
		switch t := a.DataType; {
		case t == "String.Array" || t == "Number.Array":
			n, err := parseJSON(a.StringValue, false)
			if err != nil || n.kind != jArray {
				return InvalidAttributes
			}
			p.flatten(ev, n, name, false)
		case t == "String" || strings.HasPrefix(t, "String."):
			if flags&pathLeaf != 0 {
				ev[name] = append(ev[name], evValue{kind: evString, text: a.StringValue})
			}
		case t == "Number" || strings.HasPrefix(t, "Number."):
			v, ok := numberAttribute(a.StringValue)
			if !ok {
				return InvalidAttributes
			}
			if flags&pathLeaf != 0 {
				ev[name] = append(ev[name], v)
			}
		}
	}
	switch {
	case p.root.match(ev):
		return Pass
	case len(attrs) == 0:
		return NoAttributes
	}
	return NoMatch
}

// MatchBody reports whether a message body passes the policy. The body must
// be a JSON object; anything else matches nothing.
func (p *Policy) MatchBody(body string) bool {
	return p.evaluateBody(body) == Pass
}

func (p *Policy) evaluateBody(body string) Result {
	if p == nil || p.root == nil {
		return Pass
	}
	n, err := parseJSON(body, false)
	if err != nil || n.kind != jObject {
		return InvalidBody
	}
	ev := make(event)
	p.flatten(ev, n, "", true)
	if p.root.match(ev) {
		return Pass
	}
	return NoMatch
}

// flatten records the leaf values of n under their dot-joined paths,
// looking only into paths the policy reads. Array elements share the path
// of their array.
func (p *Policy) flatten(ev event, n *jnode, path string, top bool) {
	switch n.kind {
	case jObject:
		for i, k := range n.keys {
			np := k
			if !top {
				np = path + "." + k
			}
			if p.paths[np] != 0 {
				p.flatten(ev, n.vals[i], np, false)
			}
		}
	case jArray:
		for _, el := range n.vals {
			p.flatten(ev, el, path, top)
		}
	default:
		if !top && p.paths[path]&pathLeaf != 0 {
			ev[path] = append(ev[path], nodeValue(n))
		}
	}
}

// numberAttribute reads a Number attribute value.
func numberAttribute(s string) (evValue, bool) {
	t := strings.TrimSpace(s)
	if !isDecimal(t) {
		return evValue{}, false
	}
	v := evValue{kind: evNumber, text: t}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		v.q, v.qok = comparable(f)
	}
	return v, true
}

// isDecimal accepts [+-]digits[.digits][e[+-]digits], digits on at least
// one side of the point.
func isDecimal(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := 0
	for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		digits++
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
			digits++
		}
	}
	if digits == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for ; i < len(s) && s[i] >= '0' && s[i] <= '9'; i++ {
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

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

// ---- JSON reading (as Jackson reads it) ----

type jkind uint8

const (
	jObject jkind = iota
	jArray
	jString
	jInt
	jFloat
	jTrue
	jFalse
	jNull
)

// jnode is a JSON value. Objects keep member order.
type jnode struct {
	kind jkind
	text string   // a string's value, a number's literal
	keys []string // an object's member names
	vals []*jnode // an object's member values, an array's elements
}

// jsonError is a Jackson parse error: its message and where it stopped.
type jsonError struct {
	msg       string
	line, col int
}

func (e *jsonError) Error() string { return e.msg + "\n at " + jsonLocation(e.line, e.col) }

// jsonLocation is Jackson's location text (the source is never echoed).
func jsonLocation(line, col int) string {
	return "[Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: " +
		strconv.Itoa(line) + ", column: " + strconv.Itoa(col) + "]"
}

const validValues = "(JSON String, Number, Array, Object or token 'null', 'true' or 'false')"

type jsonReader struct {
	s        string
	pos      int
	line     int
	rowStart int
	dedupe   bool // a repeated key replaces the earlier value in place (a Jackson tree)
	depth    int
}

// parseJSON reads the first JSON value of s as Jackson does; what follows
// it is ignored, as ObjectMapper ignores it.
func parseJSON(s string, dedupe bool) (*jnode, *jsonError) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	r := &jsonReader{s: s, line: 1, dedupe: dedupe}
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		// Jackson's wording for no input; not recorded from AWS.
		return nil, r.errHere("No content to map due to end-of-input")
	}
	if c == ']' || c == '}' {
		return nil, r.closeMismatch(c, "root", 1, 0)
	}
	return r.value(c, true)
}

func (r *jsonReader) colAt(pos int) int { return utf16Len(r.s[r.rowStart:pos]) + 1 }

func (r *jsonReader) errHere(msg string) *jsonError {
	return &jsonError{msg: msg, line: r.line, col: r.colAt(r.pos)}
}

func (r *jsonReader) errAt(msg string, pos int) *jsonError {
	return &jsonError{msg: msg, line: r.line, col: r.colAt(pos)}
}

// unexpected reports the character at pos, which has been consumed.
func (r *jsonReader) unexpected(c rune, pos int, comment string) *jsonError {
	return r.errAt("Unexpected character ("+charDesc(c)+"): "+comment, pos)
}

func (r *jsonReader) closeMismatch(c rune, ctx string, line, col int) *jsonError {
	want := '}'
	if c == '}' {
		want = ']'
	}
	r.pos++
	return r.errAt(fmt.Sprintf("Unexpected close marker '%c': expected '%c' (for %s starting at %s)",
		c, want, ctx, jsonLocation(line, col)), r.pos-1)
}

func (r *jsonReader) rune() (rune, int) {
	return utf8.DecodeRuneInString(r.s[r.pos:])
}

// skipSpace skips white space and returns the next character, unread;
// ok is false at the end of input.
func (r *jsonReader) skipSpace() (c rune, ok bool, err *jsonError) {
	for r.pos < len(r.s) {
		switch b := r.s[r.pos]; b {
		case ' ', '\t':
			r.pos++
		case '\n':
			r.pos++
			r.line, r.rowStart = r.line+1, r.pos
		case '\r':
			r.pos++
			if r.pos < len(r.s) && r.s[r.pos] == '\n' {
				r.pos++
			}
			r.line, r.rowStart = r.line+1, r.pos
		case '/':
			r.pos++
			return 0, false, r.unexpected('/', r.pos-1,
				"maybe a (non-standard) comment? (not recognized as one since Feature 'ALLOW_COMMENTS' not enabled for parser)")
		default:
			if b < 0x20 {
				r.pos++
				return 0, false, r.errHere("Illegal character (" + charDesc(rune(b)) +
					"): only regular white space (\\r, \\n, \\t) is allowed between tokens")
			}
			c, _ := r.rune()
			return c, true, nil
		}
	}
	return 0, false, nil
}

// value reads the value starting with c (unread).
func (r *jsonReader) value(c rune, root bool) (*jnode, *jsonError) {
	start := r.pos
	switch {
	case c == '"':
		r.pos++
		s, err := r.str(false)
		if err != nil {
			return nil, err
		}
		return &jnode{kind: jString, text: s}, nil
	case c == '{' || c == '[':
		r.pos++
		if r.depth++; r.depth > maxJSONNesting {
			return nil, r.errHere(fmt.Sprintf("Document nesting depth (%d) exceeds the maximum allowed (%d, from `StreamReadConstraints.getMaxNestingDepth()`)",
				r.depth, maxJSONNesting))
		}
		line, col := r.line, r.colAt(start)
		var (
			n   *jnode
			err *jsonError
		)
		if c == '{' {
			n, err = r.object(line, col)
		} else {
			n, err = r.array(line, col)
		}
		r.depth--
		return n, err
	case c == '}':
		r.pos++
		return nil, r.unexpected(c, start, "expected a value")
	case c == 't':
		return r.literal("true", jTrue)
	case c == 'f':
		return r.literal("false", jFalse)
	case c == 'n':
		return r.literal("null", jNull)
	case c == '-' || c >= '0' && c <= '9':
		return r.number(root)
	case c == '+':
		r.pos++
		if r.pos >= len(r.s) {
			return nil, r.errHere("Unexpected end-of-input in a Number value")
		}
		_, size := r.rune()
		r.pos += size
		return nil, r.errAt("Unexpected character ('+' (code 43)) in numeric value: JSON spec does not allow numbers to have plus signs: enable `JsonReadFeature.ALLOW_LEADING_PLUS_SIGN_FOR_NUMBERS` to allow", r.pos-size)
	case c == 'N':
		return r.nonNumeric("NaN")
	case c == 'I':
		return r.nonNumeric("Infinity")
	}
	_, size := r.rune()
	r.pos += size
	if javaIdentStart(c) {
		return nil, r.invalidToken(string(c))
	}
	return nil, r.unexpected(c, start, "expected a valid value "+validValues)
}

func (r *jsonReader) object(line, col int) (*jnode, *jsonError) {
	n := &jnode{kind: jObject}
	var index map[string]int
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, r.eofInContainer("Object", line, col)
	}
	if c == '}' {
		r.pos++
		return n, nil
	}
	if c == ']' {
		return nil, r.closeMismatch(c, "Object", line, col)
	}
	for {
		if c != '"' {
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting double-quote to start field name")
		}
		r.pos++
		name, err := r.str(true)
		if err != nil {
			return nil, err
		}
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
		if c != ':' {
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting a colon to separate field name and value")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
		v, err := r.value(c, false)
		if err != nil {
			return nil, err
		}
		n.add(name, v, r.dedupe, &index)
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		switch {
		case !ok:
			return nil, r.eofInContainer("Object", line, col)
		case c == '}':
			r.pos++
			return n, nil
		case c == ']':
			return nil, r.closeMismatch(c, "Object", line, col)
		case c != ',':
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting comma to separate Object entries")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Object entries")
		}
	}
}

// add appends a member; with dedupe a repeated name replaces the value in
// its first position.
func (n *jnode) add(name string, v *jnode, dedupe bool, index *map[string]int) {
	if dedupe {
		if *index == nil {
			*index = make(map[string]int)
		}
		if i, ok := (*index)[name]; ok {
			n.vals[i] = v
			return
		}
		(*index)[name] = len(n.keys)
	}
	n.keys = append(n.keys, name)
	n.vals = append(n.vals, v)
}

func (r *jsonReader) array(line, col int) (*jnode, *jsonError) {
	n := &jnode{kind: jArray}
	c, ok, err := r.skipSpace()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, r.eofInContainer("Array", line, col)
	}
	if c == ']' {
		r.pos++
		return n, nil
	}
	if c == '}' {
		return nil, r.closeMismatch(c, "Array", line, col)
	}
	for {
		v, err := r.value(c, false)
		if err != nil {
			return nil, err
		}
		n.vals = append(n.vals, v)
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		switch {
		case !ok:
			return nil, r.eofInContainer("Array", line, col)
		case c == ']':
			r.pos++
			return n, nil
		case c == '}':
			return nil, r.closeMismatch(c, "Array", line, col)
		case c != ',':
			_, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "was expecting comma to separate Array entries")
		}
		r.pos++
		if c, ok, err = r.skipSpace(); err != nil {
			return nil, err
		}
		if !ok {
			return nil, r.errHere("Unexpected end-of-input within/between Array entries")
		}
	}
}

func (r *jsonReader) eofInContainer(kind string, line, col int) *jsonError {
	return r.errHere("Unexpected end-of-input: expected close marker for " + kind +
		" (start marker at " + jsonLocation(line, col) + ")")
}

// literal reads true, false or null, its first letter unread.
func (r *jsonReader) literal(word string, kind jkind) (*jnode, *jsonError) {
	if err := r.matchWord(word); err != nil {
		return nil, err
	}
	return &jnode{kind: kind, text: word}, nil
}

func (r *jsonReader) nonNumeric(word string) (*jnode, *jsonError) {
	if err := r.matchWord(word); err != nil {
		return nil, err
	}
	return nil, r.errHere("Non-standard token '" + word + "': enable `JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS` to allow")
}

func (r *jsonReader) matchWord(word string) *jsonError {
	r.pos++
	for i := 1; i < len(word); i++ {
		if r.pos >= len(r.s) || r.s[r.pos] != word[i] {
			return r.invalidToken(word[:i])
		}
		r.pos++
	}
	if r.pos < len(r.s) {
		if c, _ := r.rune(); c >= '0' && c != ']' && c != '}' && javaIdentPart(c) {
			return r.invalidToken(word)
		}
	}
	return nil
}

// invalidToken reports a bad token: what was read, extended by the
// identifier characters that follow.
func (r *jsonReader) invalidToken(read string) *jsonError {
	var b strings.Builder
	b.WriteString(read)
	n := utf16Len(read)
	for r.pos < len(r.s) {
		c, size := r.rune()
		if !javaIdentPart(c) {
			break
		}
		r.pos += size
		b.WriteRune(c)
		if n++; n >= maxErrorTokenLen {
			b.WriteString("...")
			break
		}
	}
	return r.errHere("Unrecognized token '" + b.String() + "': was expecting " + validValues)
}

func isDigit(b byte) bool { return b >= '0' && b <= '9' }

func (r *jsonReader) number(root bool) (*jnode, *jsonError) {
	start := r.pos
	if r.s[r.pos] == '-' {
		r.pos++
		if r.pos >= len(r.s) {
			return nil, r.errHere("Unexpected end-of-input in a Number value")
		}
		if !isDigit(r.s[r.pos]) {
			c, size := r.rune()
			r.pos += size
			return nil, r.numberChar(c, r.pos-size, "expected digit (0-9) to follow minus sign, for valid numeric value")
		}
	}
	if r.s[r.pos] == '0' && r.pos+1 < len(r.s) && isDigit(r.s[r.pos+1]) {
		r.pos++
		return nil, r.errHere("Invalid numeric value: Leading zeroes not allowed")
	}
	kind := jInt
	intStart := r.pos
	for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
		r.pos++
	}
	length := r.pos - intStart
	if r.pos < len(r.s) && r.s[r.pos] == '.' {
		kind = jFloat
		r.pos++
		from := r.pos
		for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
			r.pos++
		}
		if r.pos == from {
			return nil, r.badNumberChar("Decimal point not followed by a digit", start)
		}
		length += r.pos - from
	}
	if r.pos < len(r.s) && (r.s[r.pos] == 'e' || r.s[r.pos] == 'E') {
		kind = jFloat
		r.pos++
		if r.pos < len(r.s) && (r.s[r.pos] == '+' || r.s[r.pos] == '-') {
			r.pos++
		}
		from := r.pos
		for r.pos < len(r.s) && isDigit(r.s[r.pos]) {
			r.pos++
		}
		if r.pos == from {
			return nil, r.badNumberChar("Exponent indicator not followed by a digit", start)
		}
		length += r.pos - from
	}
	if length > maxNumberLength {
		return nil, r.errHere(fmt.Sprintf("Number value length (%d) exceeds the maximum allowed (%d, from `StreamReadConstraints.getMaxNumberLength()`)",
			length, maxNumberLength))
	}
	if root && r.pos < len(r.s) {
		if b := r.s[r.pos]; b != ' ' && b != '\t' && b != '\r' && b != '\n' {
			c, size := r.rune()
			r.pos += size
			return nil, r.unexpected(c, r.pos-size, "Expected space separating root-level values")
		}
	}
	return &jnode{kind: kind, text: r.s[start:r.pos]}, nil
}

func (r *jsonReader) numberChar(c rune, pos int, comment string) *jsonError {
	return r.errAt("Unexpected character ("+charDesc(c)+") in numeric value: "+comment, pos)
}

// badNumberChar reports the character after a '.' or an exponent mark.
// Jackson's fast path has not moved its position past the number's first
// character by then, so that is where it reports the error.
func (r *jsonReader) badNumberChar(comment string, start int) *jsonError {
	if r.pos >= len(r.s) {
		return r.errHere("Unexpected end-of-input in a Number value")
	}
	c, size := r.rune()
	r.pos += size
	return r.numberChar(c, start, comment)
}

// str reads a string whose opening quote has been read.
func (r *jsonReader) str(name bool) (string, *jsonError) {
	start := r.pos
	var b *strings.Builder
	for {
		if r.pos >= len(r.s) {
			if name {
				return "", r.errHere("Unexpected end-of-input in field name")
			}
			return "", r.errHere("Unexpected end-of-input: was expecting closing quote for a string value")
		}
		switch c := r.s[r.pos]; {
		case c == '"':
			r.pos++
			if b == nil {
				return r.s[start : r.pos-1], nil
			}
			b.WriteString(r.s[start : r.pos-1])
			return b.String(), nil
		case c == '\\':
			if b == nil {
				b = &strings.Builder{}
			}
			b.WriteString(r.s[start:r.pos])
			r.pos++
			if err := r.escape(b); err != nil {
				return "", err
			}
			start = r.pos
		case c < 0x20:
			r.pos++
			what := "string value"
			if name {
				what = "name"
			}
			return "", r.errAt("Illegal unquoted character ("+charDesc(rune(c))+
				"): has to be escaped using backslash to be included in "+what, r.pos-1)
		default:
			r.pos++
		}
	}
}

// escape decodes an escape sequence whose backslash has been read.
func (r *jsonReader) escape(b *strings.Builder) *jsonError {
	if r.pos >= len(r.s) {
		return r.errHere("Unexpected end-of-input in character escape sequence")
	}
	c, size := r.rune()
	r.pos += size
	switch c {
	case '"', '\\', '/':
		b.WriteRune(c)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		u, err := r.hex4()
		if err != nil {
			return err
		}
		if utf16.IsSurrogate(u) {
			// A pair makes one character; a lone half cannot be UTF-8.
			if u < 0xDC00 && strings.HasPrefix(r.s[r.pos:], `\u`) {
				save := r.pos
				r.pos += 2
				lo, err := r.hex4()
				if err != nil {
					return err
				}
				if d := utf16.DecodeRune(u, lo); d != unicode.ReplacementChar {
					b.WriteRune(d)
					return nil
				}
				r.pos = save
			}
			u = unicode.ReplacementChar
		}
		b.WriteRune(u)
	default:
		return r.errAt("Unrecognized character escape "+charDesc(c), r.pos-size)
	}
	return nil
}

func (r *jsonReader) hex4() (rune, *jsonError) {
	var v rune
	for range 4 {
		if r.pos >= len(r.s) {
			return 0, r.errHere("Unexpected end-of-input in character escape sequence")
		}
		c, size := r.rune()
		r.pos += size
		var d rune
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, r.unexpected(c, r.pos-size, "expected a hex-digit for character escape sequence")
		}
		v = v<<4 | d
	}
	return v, nil
}

// charDesc describes a character as Jackson does. Jackson sees UTF-16
// units, so a supplementary character shows as its high surrogate.
func charDesc(c rune) string {
	if c >= 0x10000 {
		hi, _ := utf16.EncodeRune(c)
		return fmt.Sprintf("'?' (code %d / 0x%x)", hi, hi)
	}
	if c < 0x20 || c >= 0x7F && c <= 0x9F {
		return fmt.Sprintf("(CTRL-CHAR, code %d)", c)
	}
	if c > 255 {
		return fmt.Sprintf("'%c' (code %d / 0x%x)", c, c, c)
	}
	return fmt.Sprintf("'%c' (code %d)", c, c)
}

// javaIdentStart and javaIdentPart follow Java's Character methods on a
// UTF-16 unit (so never true for a supplementary character).
func javaIdentStart(c rune) bool {
	return c < 0x10000 && (unicode.IsLetter(c) || unicode.In(c, unicode.Nl, unicode.Sc, unicode.Pc))
}

func javaIdentPart(c rune) bool {
	if c >= 0x10000 {
		return false
	}
	return javaIdentStart(c) || unicode.In(c, unicode.Nd, unicode.Mn, unicode.Mc, unicode.Cf) ||
		c <= 0x08 || c >= 0x0E && c <= 0x1B || c >= 0x7F && c <= 0x9F
}

func utf16Len(s string) int {
	n := 0
	for _, c := range s {
		n++
		if c >= 0x10000 {
			n++
		}
	}
	return n
}

// ---- Compact writing (as Jackson writes a tree back) ----

// appendCompact writes n without white space: integers in canonical form,
// other numbers as Java doubles (an overflowing one as the string
// "Infinity"), strings escaped as SNS's writer escapes them.
func appendCompact(b []byte, n *jnode) []byte {
	switch n.kind {
	case jObject:
		b = append(b, '{')
		for i, k := range n.keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = snsjson.AppendString(b, k)
			b = append(b, ':')
			b = appendCompact(b, n.vals[i])
		}
		return append(b, '}')
	case jArray:
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCompact(b, v)
		}
		return append(b, ']')
	case jString:
		return snsjson.AppendString(b, n.text)
	case jInt:
		if n.text == "-0" {
			return append(b, '0')
		}
		return append(b, n.text...)
	case jFloat:
		f, _ := strconv.ParseFloat(n.text, 64)
		switch {
		case math.IsInf(f, 1):
			return snsjson.AppendString(b, "Infinity")
		case math.IsInf(f, -1):
			return snsjson.AppendString(b, "-Infinity")
		}
		return append(b, javaDouble(f)...)
	}
	return append(b, n.text...)
}

// ---- Reading the compact rewrite as event-ruler's parser does ----

type rtok uint8

const (
	tkNone rtok = iota
	tkStartObject
	tkEndObject
	tkStartArray
	tkEndArray
	tkFieldName
	tkString
	tkInt
	tkFloat
	tkTrue
	tkFalse
	tkNull
)

// ruleLexer steps through compact, valid JSON the way Jackson's parser
// does, so that its position (and so the reported column) is Jackson's:
// a field name token consumes the name, the colon and the start of the
// value (all of a number or literal); a string token consumes only its
// opening quote until its text is asked for.
type ruleLexer struct {
	s       string
	pos     int
	objects []bool // open containers: true for an object
	pending rtok   // the value token read along with a field name
	cur     rtok
	name    string // the current field name
	lit     string // the current number or literal
	strFrom int    // where the current string's content starts
	open    bool   // the current string's content is unread
	str     string
}

func (l *ruleLexer) col() int { return utf16Len(l.s[:l.pos]) + 1 }

func (l *ruleLexer) next() rtok {
	if l.pending != tkNone {
		t := l.pending
		l.pending = tkNone
		l.enter(t)
		l.cur = t
		return t
	}
	if l.open {
		l.finishString()
	}
	if l.pos >= len(l.s) {
		l.cur = tkNone
		return tkNone
	}
	switch l.s[l.pos] {
	case '}', ']':
		t := tkEndObject
		if l.s[l.pos] == ']' {
			t = tkEndArray
		}
		l.pos++
		l.objects = l.objects[:len(l.objects)-1]
		l.cur = t
		return t
	case ',':
		l.pos++
	}
	if n := len(l.objects); n > 0 && l.objects[n-1] {
		l.pos++ // the name's opening quote
		l.name = l.readString()
		l.pos++ // ':'
		l.pending = l.valueStart()
		l.cur = tkFieldName
		return tkFieldName
	}
	t := l.valueStart()
	l.enter(t)
	l.cur = t
	return t
}

func (l *ruleLexer) enter(t rtok) {
	switch t {
	case tkStartObject:
		l.objects = append(l.objects, true)
	case tkStartArray:
		l.objects = append(l.objects, false)
	}
}

func (l *ruleLexer) valueStart() rtok {
	c := l.s[l.pos]
	switch c {
	case '"':
		l.pos++
		l.open, l.strFrom = true, l.pos
		return tkString
	case '{':
		l.pos++
		return tkStartObject
	case '[':
		l.pos++
		return tkStartArray
	case 't':
		l.pos += 4
		l.lit = "true"
		return tkTrue
	case 'f':
		l.pos += 5
		l.lit = "false"
		return tkFalse
	case 'n':
		l.pos += 4
		l.lit = "null"
		return tkNull
	}
	start := l.pos
	t := tkInt
	for l.pos < len(l.s) && strings.IndexByte("+-0123456789.eE", l.s[l.pos]) >= 0 {
		if c := l.s[l.pos]; c == '.' || c == 'e' || c == 'E' {
			t = tkFloat
		}
		l.pos++
	}
	l.lit = l.s[start:l.pos]
	return t
}

func (l *ruleLexer) finishString() {
	l.pos = l.strFrom
	l.str = l.readString()
	l.open = false
}

// readString decodes the rest of a string and steps past its closing quote.
func (l *ruleLexer) readString() string {
	start := l.pos
	var b *strings.Builder
	for l.pos < len(l.s) {
		c := l.s[l.pos]
		if c == '"' {
			break
		}
		if c != '\\' {
			l.pos++
			continue
		}
		if b == nil {
			b = &strings.Builder{}
		}
		b.WriteString(l.s[start:l.pos])
		l.pos++
		switch e := l.s[l.pos]; e {
		case 'b':
			b.WriteByte('\b')
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'f':
			b.WriteByte('\f')
		case 'r':
			b.WriteByte('\r')
		case 'u':
			v, _ := strconv.ParseUint(l.s[l.pos+1:l.pos+5], 16, 8)
			b.WriteByte(byte(v))
			l.pos += 4
		default: // '"' and '\\'
			b.WriteByte(e)
		}
		l.pos++
		start = l.pos
	}
	s := l.s[start:l.pos]
	l.pos++ // closing quote
	if b == nil {
		return s
	}
	b.WriteString(s)
	return b.String()
}

// text is the current token's text, reading a string's content if needed.
func (l *ruleLexer) text() string {
	switch l.cur {
	case tkString:
		if l.open {
			l.finishString()
		}
		return l.str
	case tkFieldName:
		return l.name
	case tkStartObject:
		return "{"
	case tkEndObject:
		return "}"
	case tkStartArray:
		return "["
	case tkEndArray:
		return "]"
	}
	return l.lit
}

func (l *ruleLexer) double() float64 {
	f, _ := strconv.ParseFloat(l.lit, 64)
	return f
}
