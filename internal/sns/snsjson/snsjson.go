// Package snsjson writes JSON strings exactly as SNS's JSON writer does.
// The notification envelope is written with it, and so is the compact
// rewrite of a filter policy, whose columns SNS names in its errors: one
// escaping for both, so that neither drifts from the other.
package snsjson

import "unicode/utf8"

const hexDigits = "0123456789ABCDEF"

// AppendString appends s quoted the way SNS's JSON writer does: '"' and '\'
// and control characters are escaped (\b \t \n \f \r short, others as
// \u00XX with upper-case hex); '/', non-ASCII and U+2028/9 stay as they
// are. Invalid UTF-8 becomes U+FFFD so that the output is always JSON.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\uFFFD"...)
				i++
				start = i
				continue
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, '\\', 'b')
		case '\t':
			b = append(b, '\\', 't')
		case '\n':
			b = append(b, '\\', 'n')
		case '\f':
			b = append(b, '\\', 'f')
		case '\r':
			b = append(b, '\\', 'r')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
