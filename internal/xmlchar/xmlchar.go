// Package xmlchar tells whether text is made only of the characters XML 1.0
// allows (#x9 | #xA | #xD | #x20-#xD7FF | #xE000-#xFFFD | #x10000-#x10FFFF):
// the characters SQS accepts in message bodies and attribute values, and SNS
// in messages, since both still answer in XML.
package xmlchar

import "unicode/utf8"

// Valid reports whether s is valid UTF-8 of XML 1.0 characters only.
func Valid(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		// DecodeRuneInString already refuses surrogates (U+D800-U+DFFF).
		i += n
	}
	return true
}
