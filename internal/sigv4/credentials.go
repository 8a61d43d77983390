package sigv4

import (
	"bufio"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
)

// Identity is a caller: its access key and the account it acts in.
type Identity struct {
	AccessKey string
	Account   string
}

// key is one access key of a credentials file.
type key struct {
	Identity
	secret string
	// derived caches the last signing key made from secret: most callers
	// sign for one region and service, and the key changes once a day.
	derived atomic.Pointer[signingKey]
}

type signingKey struct {
	scope string // date/region/service
	key   []byte
}

// Credentials are the identities of a shared-credentials file, by access
// key. It is safe for concurrent use.
type Credentials struct {
	keys map[string]*key
}

// Lookup finds the identity of an access key.
func (c *Credentials) Lookup(accessKey string) (Identity, bool) {
	if c == nil {
		return Identity{}, false
	}
	k, ok := c.keys[accessKey]
	if !ok {
		return Identity{}, false
	}
	return k.Identity, true
}

// Len is the number of access keys.
func (c *Credentials) Len() int {
	if c == nil {
		return 0
	}
	return len(c.keys)
}

// LoadCredentials reads a shared-credentials file (see ParseCredentials).
func LoadCredentials(path, defaultAccount string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	defer f.Close()
	c, err := ParseCredentials(f, defaultAccount)
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	return c, nil
}

// ParseCredentials reads the AWS shared-credentials format: sections
// ([name], or [profile name] as in the config file), each with
// aws_access_key_id, aws_secret_access_key and optionally aws_account_id
// (12 digits; defaultAccount when absent). Lines starting with # or ; are
// comments; other keys (aws_session_token, region, ...) are ignored, and
// so is a section with neither key nor secret. A key named twice, a
// section with only one of key and secret, or no key at all is an error.
func ParseCredentials(r io.Reader, defaultAccount string) (*Credentials, error) {
	c := &Credentials{keys: make(map[string]*key)}
	type section struct {
		name                  string
		line                  int
		akid, secret, account string
	}
	var cur *section
	var errs []error
	finish := func() {
		if cur == nil || (cur.akid == "" && cur.secret == "") {
			return
		}
		switch {
		case cur.akid == "":
			errs = append(errs, fmt.Errorf("section [%s] (line %d) has aws_secret_access_key but no aws_access_key_id", cur.name, cur.line))
			return
		case cur.secret == "":
			errs = append(errs, fmt.Errorf("section [%s] (line %d) has aws_access_key_id but no aws_secret_access_key", cur.name, cur.line))
			return
		case !IsAccountID(cur.account):
			errs = append(errs, fmt.Errorf("section [%s] (line %d): aws_account_id %q is not 12 digits", cur.name, cur.line, cur.account))
			return
		}
		if _, dup := c.keys[cur.akid]; dup {
			errs = append(errs, fmt.Errorf("section [%s] (line %d): access key %s is named twice", cur.name, cur.line, cur.akid))
			return
		}
		c.keys[cur.akid] = &key{Identity: Identity{AccessKey: cur.akid, Account: cur.account}, secret: cur.secret}
	}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
			continue
		case line[0] == '[':
			if !strings.HasSuffix(line, "]") {
				errs = append(errs, fmt.Errorf("line %d: a section header must end with ]", n))
				continue
			}
			finish()
			name := strings.TrimSpace(line[1 : len(line)-1])
			name = strings.TrimSpace(strings.TrimPrefix(name, "profile "))
			cur = &section{name: name, line: n, account: defaultAccount}
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			errs = append(errs, fmt.Errorf("line %d: want name = value", n))
			continue
		}
		if cur == nil {
			errs = append(errs, fmt.Errorf("line %d: %s comes before any [section]", n, strings.TrimSpace(name)))
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "aws_access_key_id":
			cur.akid = value
		case "aws_secret_access_key":
			cur.secret = value
		case "aws_account_id":
			cur.account = value
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	finish()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if len(c.keys) == 0 {
		return nil, errors.New("no section has aws_access_key_id and aws_secret_access_key")
	}
	return c, nil
}

// IsAccountID reports whether s has the form of an AWS account id, 12
// digits (the form of the access keys LocalStack users pass to choose an
// account, too).
func IsAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Check finds the identity of an access key whose secret is secret; the
// secret is compared in constant time.
func (c *Credentials) Check(accessKey, secret string) (Identity, bool) {
	if c == nil {
		return Identity{}, false
	}
	k, ok := c.keys[accessKey]
	if !ok || subtle.ConstantTimeCompare([]byte(k.secret), []byte(secret)) != 1 {
		return Identity{}, false
	}
	return k.Identity, true
}

// Accounts lists the accounts of the keys, sorted, each once.
func (c *Credentials) Accounts() []string {
	if c == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, k := range c.keys {
		if !seen[k.Account] {
			seen[k.Account] = true
			out = append(out, k.Account)
		}
	}
	slices.Sort(out)
	return out
}
