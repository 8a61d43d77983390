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
	"strconv"
	"strings"
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
