package protocol

import "testing"

// FuzzPlainWords holds the word scans to the byte tables: every byte they
// skip is plain, and they stop only within 8 bytes of the first one that
// is not (or of the end).
func FuzzPlainWords(f *testing.F) {
	for _, s := range []string{"", "abcdefgh", "abcdefg\"", "abc\x1fdefgh12345678", "\x7f\x80aaaaaaaaaaaa", "<&>\t\n\r'", "é😀aaaaaaaaaaaaaaa"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tc := range []struct {
			name  string
			scan  func(string, int) int
			plain *[256]bool
		}{{"json", plainJSONWords, &jsonPlain}, {"xml", plainXMLWords, &xmlPlain}} {
			for start := range min(len(s), 9) {
				end := tc.scan(s, start)
				first := start
				for first < len(s) && tc.plain[s[first]] && s[first] != '\t' && s[first] != '\n' {
					first++
				}
				if end < start || end > first || (first-end >= 8 && end+8 <= len(s)) {
					t.Fatalf("%s scan of %q from %d stopped at %d; first stop byte at %d", tc.name, s, start, end, first)
				}
			}
		}
	})
}
