// Package policy reads and evaluates the resource policies of SQS queues
// and SNS topics: the IAM access-policy language as those services accept
// it (Version, Id, Statement with Sid, Effect, Principal or NotPrincipal,
// Action or NotAction, Resource or NotResource, Condition).
//
// Ferry has no identity policies: a caller's key holds every permission
// in its own account, so a resource policy only decides what crosses
// accounts and what its owner denies (see Authorize).
package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ferrymq/ferry/internal/sigv4"
)

// Effect is what a matching statement decides.
type Effect bool

// The two effects.
const (
	Deny  Effect = false
	Allow Effect = true
)

// Policy is a parsed resource policy.
type Policy struct {
	Version    string
	ID         string
	Statements []Statement
}

// Statement is one statement; each list holds at least one value, and of
// each pair (Principal/NotPrincipal, Action/NotAction, Resource/NotResource)
// the Not flag tells which one the document gave.
type Statement struct {
	Sid          string
	Effect       Effect
	Principal    Principal
	NotPrincipal bool
	Actions      []string // lower case, wildcards kept
	NotAction    bool
	// Resources is nil when the document names none: the statement is
	// about the resource the policy is attached to.
	Resources   []string
	NotResource bool
	Conditions  []Condition
}

// Principal is a statement's Principal (or NotPrincipal).
type Principal struct {
	// Anyone: "*" or {"AWS": "*"}, which IAM takes as the same for a
	// resource policy.
	Anyone bool
	// Accounts are the AWS principals that name a whole account (an id or
	// arn:PARTITION:iam::ID:root); ARNs the others (users, roles, ...).
	Accounts []string
	ARNs     []string
	// Services are service principals ("sns.amazonaws.com"), lower case.
	Services []string
	// Others are Federated and CanonicalUser principals, which no Ferry
	// caller is.
	Others []string
}

// Error tells why a document is not a valid policy. Services answer it
// with their own wording; Reason is for logs and tests.
type Error struct{ Reason string }

func (e *Error) Error() string { return "invalid policy: " + e.Reason }

func invalid(format string, args ...any) *Error {
	return &Error{Reason: fmt.Sprintf(format, args...)}
}

// Versions of the access-policy language.
const (
	Version2008 = "2008-10-17"
	Version2012 = "2012-10-17"
)

// MaxStatements bounds the statements of one document, well above what
// SQS's and SNS's size limits let through, so that a hostile document
// cannot make every request of a queue slow.
const MaxStatements = 1000

// Parse reads a policy document. Element names are case-sensitive, as IAM
// has them; a value that is one string or a list of strings may be
// either.
func Parse(doc string) (*Policy, error) {
	var top map[string]json.RawMessage
	if err := decodeStrict([]byte(doc), &top); err != nil {
		return nil, invalid("not a JSON object: %v", err)
	}
	if top == nil {
		return nil, invalid("not a JSON object")
	}
	p := &Policy{}
	for k, v := range top {
		switch k {
		case "Version":
			if err := json.Unmarshal(v, &p.Version); err != nil {
				return nil, invalid("Version is not a string")
			}
			if p.Version != Version2008 && p.Version != Version2012 {
				return nil, invalid("unknown Version %q", p.Version)
			}
		case "Id":
			if err := json.Unmarshal(v, &p.ID); err != nil {
				return nil, invalid("Id is not a string")
			}
		case "Statement":
		default:
			return nil, invalid("unknown element %q", k)
		}
	}
	raw, ok := top["Statement"]
	if !ok || isNull(raw) {
		return nil, invalid("no Statement")
	}
	var list []json.RawMessage
	if b := bytes.TrimSpace(raw); len(b) > 0 && b[0] == '[' {
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, invalid("Statement: %v", err)
		}
	} else {
		list = []json.RawMessage{raw}
	}
	if len(list) > MaxStatements {
		return nil, invalid("more than %d statements", MaxStatements)
	}
	sids := make(map[string]bool, len(list))
	for i, r := range list {
		st, err := parseStatement(r)
		if err != nil {
			err.Reason = fmt.Sprintf("statement %d: %s", i+1, err.Reason)
			return nil, err
		}
		// IAM wants Sids unique within a document; AddPermission's labels
		// are unique by construction.
		if st.Sid != "" {
			if sids[st.Sid] {
				return nil, invalid("statement %d: Sid %q repeated", i+1, st.Sid)
			}
			sids[st.Sid] = true
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

// decodeStrict unmarshals exactly one JSON value.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("data after the document")
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("data after the document")
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

func parseStatement(raw json.RawMessage) (Statement, *Error) {
	var st Statement
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return st, invalid("not an object")
	}
	for k := range m {
		switch k {
		case "Sid", "Effect", "Principal", "NotPrincipal", "Action", "NotAction",
			"Resource", "NotResource", "Condition":
		default:
			return st, invalid("unknown element %q", k)
		}
	}
	if v, ok := m["Sid"]; ok {
		if json.Unmarshal(v, &st.Sid) != nil {
			return st, invalid("Sid is not a string")
		}
	}
	var effect string
	if json.Unmarshal(m["Effect"], &effect) != nil {
		return st, invalid("no Effect")
	}
	switch effect {
	case "Allow":
		st.Effect = Allow
	case "Deny":
		st.Effect = Deny
	default:
		return st, invalid("Effect %q is neither Allow nor Deny", effect)
	}

	name, v, err := oneOf(m, "Principal", "NotPrincipal")
	if err != nil {
		return st, err
	}
	if name == "" {
		// A resource policy must say to whom it applies.
		return st, invalid("no Principal")
	}
	st.NotPrincipal = name == "NotPrincipal"
	if st.Principal, err = parsePrincipal(v); err != nil {
		return st, err
	}

	name, v, err = oneOf(m, "Action", "NotAction")
	if err != nil {
		return st, err
	}
	if name == "" {
		return st, invalid("no Action")
	}
	st.NotAction = name == "NotAction"
	if st.Actions, err = stringList(name, v); err != nil {
		return st, err
	}
	for i, a := range st.Actions {
		if a != "*" && !validAction(a) {
			return st, invalid("%s %q is not service:action", name, a)
		}
		st.Actions[i] = strings.ToLower(a)
	}

	name, v, err = oneOf(m, "Resource", "NotResource")
	if err != nil {
		return st, err
	}
	if name != "" {
		st.NotResource = name == "NotResource"
		if st.Resources, err = stringList(name, v); err != nil {
			return st, err
		}
		for _, r := range st.Resources {
			if r != "*" && !strings.HasPrefix(r, "arn:") {
				return st, invalid("%s %q is not an ARN", name, r)
			}
		}
	}

	if v, ok := m["Condition"]; ok && !isNull(v) {
		if st.Conditions, err = parseConditions(v); err != nil {
			return st, err
		}
	}
	return st, nil
}

// validAction: "service:action", the service of letters, digits and
// dashes, the action not empty.
func validAction(a string) bool {
	svc, act, ok := strings.Cut(a, ":")
	if !ok || svc == "" || act == "" || strings.Contains(act, ":") {
		return false
	}
	for _, c := range svc {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// oneOf returns which of the two exclusive elements m holds, and its
// value; both is an error, neither is name "".
func oneOf(m map[string]json.RawMessage, a, b string) (name string, v json.RawMessage, err *Error) {
	va, hasA := m[a]
	vb, hasB := m[b]
	switch {
	case hasA && hasB:
		return "", nil, invalid("both %s and %s", a, b)
	case hasA:
		return a, va, nil
	case hasB:
		return b, vb, nil
	}
	return "", nil, nil
}

// stringList reads one string or a non-empty list of strings.
func stringList(name string, raw json.RawMessage) ([]string, *Error) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, invalid("%s is empty", name)
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil || len(many) == 0 {
		return nil, invalid("%s is neither a string nor a list of strings", name)
	}
	for _, s := range many {
		if s == "" {
			return nil, invalid("%s holds an empty string", name)
		}
	}
	return many, nil
}

func parsePrincipal(raw json.RawMessage) (Principal, *Error) {
	var p Principal
	var star string
	if json.Unmarshal(raw, &star) == nil {
		if star != "*" {
			return p, invalid("Principal %q is neither \"*\" nor an object", star)
		}
		p.Anyone = true
		return p, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		return p, invalid("Principal is neither \"*\" nor an object")
	}
	for kind, v := range m {
		vals, err := stringList("Principal "+kind, v)
		if err != nil {
			return p, err
		}
		switch kind {
		case "AWS":
			for _, s := range vals {
				switch {
				case s == "*":
					p.Anyone = true
				case sigv4.IsAccountID(s):
					p.Accounts = append(p.Accounts, s)
				case strings.HasPrefix(s, "arn:"):
					if acct, ok := rootAccount(s); ok {
						p.Accounts = append(p.Accounts, acct)
					} else {
						p.ARNs = append(p.ARNs, s)
					}
				default:
					return p, invalid("AWS principal %q is neither an account nor an ARN", s)
				}
			}
		case "Service":
			for _, s := range vals {
				p.Services = append(p.Services, strings.ToLower(s))
			}
		case "Federated", "CanonicalUser":
			p.Others = append(p.Others, vals...)
		default:
			return p, invalid("unknown principal type %q", kind)
		}
	}
	return p, nil
}

// rootAccount reads arn:PARTITION:iam::ACCOUNT:root.
func rootAccount(s string) (string, bool) {
	parts := strings.Split(s, ":")
	if len(parts) != 6 || parts[2] != "iam" || parts[5] != "root" || !sigv4.IsAccountID(parts[4]) {
		return "", false
	}
	return parts[4], true
}
