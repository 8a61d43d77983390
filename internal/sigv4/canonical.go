package sigv4

import (
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The canonical request, as AWS defines it for every service but S3:
//
//	Method \n CanonicalURI \n CanonicalQuery \n CanonicalHeaders \n SignedHeaders \n HashedPayload
//
// CanonicalURI is the path as it came on the wire, its dot segments and
// repeated slashes removed, URI-encoded once more (so a %XX on the wire
// is %25XX here, as the SDKs sign it). CanonicalQuery is each parameter's
// name and value decoded and RFC 3986-encoded again, sorted by name and
// then value. CanonicalHeaders has one name:value line per signed header,
// its values trimmed, runs of spaces made one, repeated headers joined by
// commas.

// appendCanonical appends r's canonical request to b. omitSignature
// leaves X-Amz-Signature out of the query (the presigned form).
func appendCanonical(b []byte, r *http.Request, signedHeaders string, omitSignature bool, payloadHash string) []byte {
	b = append(b, r.Method...)
	b = append(b, '\n')
	b = appendCanonicalURI(b, wirePath(r))
	b = append(b, '\n')
	b = appendCanonicalQuery(b, r.URL.RawQuery, omitSignature)
	b = append(b, '\n')
	for name := range strings.SplitSeq(signedHeaders, ";") {
		b = append(b, name...)
		b = append(b, ':')
		b = appendHeaderValue(b, r, name)
		b = append(b, '\n')
	}
	b = append(b, '\n')
	b = append(b, signedHeaders...)
	b = append(b, '\n')
	b = append(b, payloadHash...)
	return b
}

// wirePath is the request's path as the client sent it, still escaped.
func wirePath(r *http.Request) string {
	p := r.RequestURI
	if p == "" || p == "*" {
		return r.URL.EscapedPath()
	}
	if i := strings.IndexByte(p, '?'); i >= 0 {
		p = p[:i]
	}
	// An absolute-form request target (a proxy's) carries scheme and host.
	if !strings.HasPrefix(p, "/") {
		if i := strings.Index(p, "://"); i >= 0 {
			p = p[i+3:]
			if j := strings.IndexByte(p, '/'); j >= 0 {
				p = p[j:]
			} else {
				p = "/"
			}
		}
	}
	return p
}

// appendCanonicalURI normalises path (RFC 3986 dot segments removed,
// repeated slashes made one, a trailing slash kept) and encodes it.
func appendCanonicalURI(b []byte, path string) []byte {
	if path == "" {
		return append(b, '/')
	}
	if needsNormalising(path) {
		path = normalise(path)
	}
	return appendEncoded(b, path, false)
}

func needsNormalising(p string) bool {
	return strings.Contains(p, "//") || strings.Contains(p, "/.") || p[0] != '/'
}

func normalise(p string) string {
	trailing := strings.HasSuffix(p, "/") || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/..")
	var out []string
	for seg := range strings.SplitSeq(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, seg)
		}
	}
	s := "/" + strings.Join(out, "/")
	if trailing && len(out) > 0 {
		s += "/"
	}
	return s
}

// appendEncoded is RFC 3986 encoding as SigV4 wants it: unreserved
// characters kept, everything else %XX in upper case; '/' kept unless
// slash is set.
func appendEncoded(b []byte, s string, slash bool) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || (c == '/' && !slash) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return b
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~'
}

// appendCanonicalQuery encodes the raw query's parameters, sorted. A
// parameter that does not decode is kept as sent.
func appendCanonicalQuery(b []byte, raw string, omitSignature bool) []byte {
	if raw == "" {
		return b
	}
	type param struct{ name, value string }
	var params []param
	for piece := range strings.SplitSeq(raw, "&") {
		if piece == "" {
			continue
		}
		name, value, _ := strings.Cut(piece, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if v, err := url.QueryUnescape(value); err == nil {
			value = v
		}
		if omitSignature && name == "X-Amz-Signature" {
			continue
		}
		params = append(params, param{string(appendEncoded(nil, name, true)), string(appendEncoded(nil, value, true))})
	}
	slices.SortFunc(params, func(a, b param) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(a.value, b.value)
	})
	for i, p := range params {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, p.name...)
		b = append(b, '=')
		b = append(b, p.value...)
	}
	return b
}

// appendHeaderValue appends the canonical value of the header name
// (lowercase): Host from the request line or :authority, the others
// from the header, every occurrence trimmed and joined by commas.
func appendHeaderValue(b []byte, r *http.Request, name string) []byte {
	if name == "host" {
		return appendTrimmed(b, r.Host)
	}
	vals := r.Header[textproto.CanonicalMIMEHeaderKey(name)]
	if len(vals) == 0 && name == "content-length" && r.ContentLength > 0 {
		// A request made in the process (not read off the wire) keeps its
		// length in ContentLength only.
		return strconv.AppendInt(b, r.ContentLength, 10)
	}
	for i, v := range vals {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTrimmed(b, v)
	}
	return b
}

// appendTrimmed appends v without leading and trailing spaces and with
// each run of spaces inside made one.
func appendTrimmed(b []byte, v string) []byte {
	v = strings.TrimSpace(v)
	space := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == ' ' || c == '\t' {
			space = true
			continue
		}
		if space {
			b = append(b, ' ')
			space = false
		}
		b = append(b, c)
	}
	return b
}
