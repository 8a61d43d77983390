package httpfast

import (
	"bytes"
	"net/http"
	"strconv"
)

// request is one parsed request head: slices of the connection's read
// buffer, valid until the buffer is next read into.
type request struct {
	method, target []byte
	minor          int // HTTP/1.minor
	headers        []field
	contentLength  int64 // -1: none given
	host           []byte
	hasHost        bool
	close          bool // the client asks the connection to end after this request
	keepAlive10    bool // an HTTP/1.0 client asks to keep the connection
	headLen        int  // bytes of the head, the final CRLF included
}

type field struct{ name, value []byte }

// parseResult says what parse made of the bytes it was given.
type parseResult int

const (
	parsed     parseResult = iota
	incomplete             // more bytes are needed
	handOff                // net/http must serve this request (odd, malformed or unsupported)
)

// parse reads a request head from b. It accepts only the common subset:
// a request line "TOKEN /origin-form HTTP/1.x", CRLF line ends, header
// names that are tokens, values without control bytes, at most one
// Content-Length of digits, exactly one Host on HTTP/1.1, and no
// Transfer-Encoding, Expect or Upgrade. Anything else is handOff, so
// that net/http answers it as it always has. headers is reused.
func parse(b []byte, req *request) parseResult {
	headers := req.headers[:0]
	*req = request{headers: headers, contentLength: -1}
	// The request line.
	eol := bytes.IndexByte(b, '\n')
	if eol < 0 {
		return incomplete
	}
	if eol == 0 || b[eol-1] != '\r' {
		return handOff
	}
	line := b[:eol-1]
	sp := bytes.IndexByte(line, ' ')
	if sp <= 0 {
		return handOff
	}
	req.method = line[:sp]
	for _, c := range req.method {
		if !isToken(c) {
			return handOff
		}
	}
	rest := line[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	if sp <= 0 || rest[0] != '/' {
		return handOff
	}
	req.target = rest[:sp]
	for _, c := range req.target {
		if c <= ' ' || c == 0x7f {
			return handOff
		}
	}
	switch string(rest[sp+1:]) {
	case "HTTP/1.1":
		req.minor = 1
	case "HTTP/1.0":
		req.minor = 0
	default:
		return handOff
	}
	if string(req.method) == http.MethodConnect || string(req.method) == "PRI" {
		return handOff
	}
	// The header lines.
	pos := eol + 1
	var connection [][]byte
	for {
		eol = bytes.IndexByte(b[pos:], '\n')
		if eol < 0 {
			return incomplete
		}
		eol += pos
		if eol == pos || b[eol-1] != '\r' {
			return handOff // a bare LF
		}
		line = b[pos : eol-1]
		pos = eol + 1
		if len(line) == 0 {
			break
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return handOff // also a continuation line, which starts with a space
		}
		name := line[:colon]
		for _, c := range name {
			if !isToken(c) {
				return handOff
			}
		}
		value := trimOWS(line[colon+1:])
		for _, c := range value {
			if (c < ' ' && c != '\t') || c == 0x7f {
				return handOff
			}
		}
		switch {
		case asciiEqualFold(name, "Content-Length"):
			if req.contentLength >= 0 {
				return handOff
			}
			n, ok := parseLength(value)
			if !ok {
				return handOff
			}
			req.contentLength = n
		case asciiEqualFold(name, "Host"):
			if req.hasHost || !validHost(value) {
				return handOff
			}
			req.hasHost, req.host = true, value
			continue // net/http keeps Host out of Header
		case asciiEqualFold(name, "Transfer-Encoding"), asciiEqualFold(name, "Expect"),
			asciiEqualFold(name, "Upgrade"), asciiEqualFold(name, "HTTP2-Settings"):
			return handOff
		case asciiEqualFold(name, "Connection"):
			connection = append(connection, value)
		}
		headers = append(headers, field{name, value})
	}
	req.headers, req.headLen = headers, pos
	if req.minor == 1 && !req.hasHost {
		return handOff // net/http answers 400
	}
	for _, v := range connection {
		if hasToken(v, "close") {
			req.close = true
		}
		if req.minor == 0 && hasToken(v, "keep-alive") {
			req.keepAlive10 = true
		}
	}
	if req.minor == 0 && !req.keepAlive10 {
		req.close = true
	}
	return parsed
}

// parseLength reads a Content-Length as net/http does: digits only.
func parseLength(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 18 {
		return 0, false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	return n, err == nil
}

// validHost accepts the bytes a host and port are made of (net/http's
// check is wider; anything beyond this is handed to it).
func validHost(v []byte) bool {
	for _, c := range v {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.' || c == '-' || c == ':' || c == '[' || c == ']' || c == '_':
		default:
			return false
		}
	}
	return true
}

func trimOWS(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// hasToken reports whether the comma-separated list v holds token,
// case-insensitively.
func hasToken(v []byte, token string) bool {
	for len(v) > 0 {
		var elem []byte
		if i := bytes.IndexByte(v, ','); i >= 0 {
			elem, v = v[:i], v[i+1:]
		} else {
			elem, v = v, nil
		}
		if asciiEqualFold(trimOWS(elem), token) {
			return true
		}
	}
	return false
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isToken reports whether c may appear in an RFC 9110 token.
func isToken(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}
