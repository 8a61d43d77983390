package policy

import (
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Condition is one key of one operator of a statement's Condition block:
// {"StringEquals": {"aws:SourceAccount": "111122223333"}}.
type Condition struct {
	Operator string // as written, e.g. "ForAnyValue:StringLikeIfExists"
	Key      string // lower case: keys are case-insensitive
	Values   []string

	test    func(want, got string) bool
	negated bool // StringNotEquals, ArnNotLike, NotIpAddress, ...
	ifExist bool
	set     setOp
	null    bool           // the Null operator
	nets    []netip.Prefix // IpAddress, NotIpAddress
}

type setOp int

const (
	single setOp = iota
	forAnyValue
	forAllValues
)

// operators are the base condition operators: how a policy value tests a
// request value, and whether the operator is the negation of that test.
var operators = map[string]struct {
	test    func(want, got string) bool
	negated bool
	check   func(string) bool // a valid policy value
}{
	"StringEquals":              {test: eq, check: anyValue},
	"StringNotEquals":           {test: eq, negated: true, check: anyValue},
	"StringEqualsIgnoreCase":    {test: strings.EqualFold, check: anyValue},
	"StringNotEqualsIgnoreCase": {test: strings.EqualFold, negated: true, check: anyValue},
	"StringLike":                {test: Match, check: anyValue},
	"StringNotLike":             {test: Match, negated: true, check: anyValue},
	"ArnEquals":                 {test: arnLike, check: anyValue},
	"ArnLike":                   {test: arnLike, check: anyValue},
	"ArnNotEquals":              {test: arnLike, negated: true, check: anyValue},
	"ArnNotLike":                {test: arnLike, negated: true, check: anyValue},
	"NumericEquals":             {test: numeric(func(c int) bool { return c == 0 }), check: isNumber},
	"NumericNotEquals":          {test: numeric(func(c int) bool { return c == 0 }), negated: true, check: isNumber},
	"NumericLessThan":           {test: numeric(func(c int) bool { return c > 0 }), check: isNumber},
	"NumericLessThanEquals":     {test: numeric(func(c int) bool { return c >= 0 }), check: isNumber},
	"NumericGreaterThan":        {test: numeric(func(c int) bool { return c < 0 }), check: isNumber},
	"NumericGreaterThanEquals":  {test: numeric(func(c int) bool { return c <= 0 }), check: isNumber},
	"DateEquals":                {test: date(func(c int) bool { return c == 0 }), check: isDate},
	"DateNotEquals":             {test: date(func(c int) bool { return c == 0 }), negated: true, check: isDate},
	"DateLessThan":              {test: date(func(c int) bool { return c > 0 }), check: isDate},
	"DateLessThanEquals":        {test: date(func(c int) bool { return c >= 0 }), check: isDate},
	"DateGreaterThan":           {test: date(func(c int) bool { return c < 0 }), check: isDate},
	"DateGreaterThanEquals":     {test: date(func(c int) bool { return c <= 0 }), check: isDate},
	"Bool":                      {test: strings.EqualFold, check: anyValue},
	"BinaryEquals":              {test: eq, check: anyValue},
	// IpAddress tests against the parsed networks, not through test.
	"IpAddress":    {check: isNetwork},
	"NotIpAddress": {negated: true, check: isNetwork},
	"Null":         {check: isBool},
}

func eq(a, b string) bool    { return a == b }
func anyValue(string) bool   { return true }
func isBool(s string) bool   { return strings.EqualFold(s, "true") || strings.EqualFold(s, "false") }
func isNumber(s string) bool { _, err := strconv.ParseFloat(s, 64); return err == nil }
func isDate(s string) bool   { _, ok := parseDate(s); return ok }

func isNetwork(s string) bool { _, ok := parseNetwork(s); return ok }

// numeric compares want with got: cmp(want, got) as -1, 0, 1.
func numeric(ok func(c int) bool) func(want, got string) bool {
	return func(want, got string) bool {
		w, err1 := strconv.ParseFloat(want, 64)
		g, err2 := strconv.ParseFloat(got, 64)
		if err1 != nil || err2 != nil {
			return false
		}
		return ok(compare(w, g))
	}
}

func date(ok func(c int) bool) func(want, got string) bool {
	return func(want, got string) bool {
		w, ok1 := parseDate(want)
		g, ok2 := parseDate(got)
		if !ok1 || !ok2 {
			return false
		}
		return ok(w.Compare(g))
	}
}

func compare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// parseDate reads the forms IAM accepts: ISO 8601 (with or without time
// and zone) or seconds since the epoch.
func parseDate(s string) (time.Time, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.Unix(n, 0), true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04Z07:00", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// parseNetwork reads a CIDR block or a single address.
func parseNetwork(s string) (netip.Prefix, bool) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), true
	}
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a, a.BitLen()), true
	}
	return netip.Prefix{}, false
}

// arnLike matches ARNs element by element, each with the wildcards * and
// ?, so that a * never reaches across a ':' of the first five.
func arnLike(want, got string) bool {
	if want == "*" {
		return true
	}
	// A pattern of fewer elements ("arn:aws:sns:*") lets its last one
	// cover the rest of the ARN.
	w := strings.SplitN(want, ":", 6)
	g := strings.SplitN(got, ":", len(w))
	if len(g) != len(w) || len(strings.SplitN(got, ":", 6)) != 6 {
		return false
	}
	for i := range w {
		if !Match(w[i], g[i]) {
			return false
		}
	}
	return true
}

// parseConditions reads a Condition block.
func parseConditions(raw json.RawMessage) ([]Condition, *Error) {
	var block map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &block); err != nil {
		return nil, invalid("Condition is not an object of objects")
	}
	var out []Condition
	for op, keys := range block {
		base, set, ifExist := splitOperator(op)
		def, ok := operators[base]
		if !ok {
			return nil, invalid("unknown condition operator %q", op)
		}
		if base == "Null" && (ifExist || set != single) {
			return nil, invalid("condition operator %q", op)
		}
		for key, v := range keys {
			vals, err := conditionValues(v)
			if err != nil {
				return nil, invalid("%s %s: %s", op, key, err.Reason)
			}
			c := Condition{Operator: op, Key: strings.ToLower(key), Values: vals,
				test: def.test, negated: def.negated, ifExist: ifExist, set: set, null: base == "Null"}
			for _, val := range vals {
				if !def.check(val) {
					return nil, invalid("%s %s: value %q", op, key, val)
				}
				if base == "IpAddress" || base == "NotIpAddress" {
					n, _ := parseNetwork(val)
					c.nets = append(c.nets, n)
				}
			}
			out = append(out, c)
		}
	}
	return out, nil
}

// splitOperator cuts ForAnyValue:/ForAllValues: and IfExists off op.
func splitOperator(op string) (base string, set setOp, ifExist bool) {
	switch {
	case strings.HasPrefix(op, "ForAnyValue:"):
		op, set = op[len("ForAnyValue:"):], forAnyValue
	case strings.HasPrefix(op, "ForAllValues:"):
		op, set = op[len("ForAllValues:"):], forAllValues
	}
	op, ifExist = strings.CutSuffix(op, "IfExists")
	return op, set, ifExist
}

// conditionValues reads a condition's value: a string, number or boolean,
// or a non-empty list of them.
func conditionValues(raw json.RawMessage) ([]string, *Error) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		list = []json.RawMessage{raw}
	} else if len(list) == 0 {
		return nil, invalid("no values")
	}
	out := make([]string, 0, len(list))
	for _, r := range list {
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, invalid("bad value")
		}
		switch v := v.(type) {
		case string:
			out = append(out, v)
		case bool:
			out = append(out, strconv.FormatBool(v))
		case float64:
			// The literal as written: 12-digit account ids and large
			// numbers must not go through a float.
			out = append(out, string(r))
		default:
			return nil, invalid("a value is neither a string, a number nor a boolean")
		}
	}
	return out, nil
}

// holds reports whether the condition holds for the request's values of
// its key (absent: nil, ok false).
func (c *Condition) holds(got []string, present bool) bool {
	if c.null {
		// {"Null": {"k": "true"}}: the key is absent.
		want := strings.EqualFold(c.Values[0], "true")
		return want == !present
	}
	if !present {
		switch {
		case c.ifExist:
			return true
		case c.set == forAllValues:
			return true // every one of no values matches
		case c.set == forAnyValue:
			return false
		}
		// A negated operator holds for an absent key: nothing in the
		// request equals the values.
		return c.negated
	}
	switch c.set {
	case forAllValues:
		for _, g := range got {
			if c.matchesAny(g) == c.negated {
				return false
			}
		}
		return true
	case forAnyValue:
		for _, g := range got {
			if c.matchesAny(g) != c.negated {
				return true
			}
		}
		return false
	}
	for _, g := range got {
		if c.matchesAny(g) {
			return !c.negated
		}
	}
	return c.negated
}

// matchesAny reports whether the request value got matches one of the
// condition's values by the positive form of its operator.
func (c *Condition) matchesAny(got string) bool {
	if c.nets != nil {
		a, err := netip.ParseAddr(got)
		if err != nil {
			return false
		}
		a = a.Unmap()
		for _, n := range c.nets {
			if n.Contains(a) {
				return true
			}
		}
		return false
	}
	for _, w := range c.Values {
		if c.test(w, got) {
			return true
		}
	}
	return false
}
