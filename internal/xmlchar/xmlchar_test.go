package xmlchar

import "testing"

func TestValid(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		"":                   true,
		"plain text":         true,
		"tab\tnl\ncr\r":      true,
		"ünïcode ✓ 𝄞":        true,
		"\x00":               false,
		"bell\x07":           false,
		"\x1f":               false,
		"\xff":               false, // not UTF-8
		"\xed\xa0\x80":       false, // a surrogate, encoded
		"\uFFFE":             false,
		"\uFFFF":             false,
		"\uFFFD":             true,
		"\U0010FFFF":         true,
		"ok\x0bvertical tab": false,
	} {
		if got := Valid(s); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}
