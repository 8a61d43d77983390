package snsjson

import (
	"encoding/json"
	"testing"
)

func TestAppendString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"", `""`},
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"\b\t\n\f\r", `"\b\t\n\f\r"`},
		{"\x00\x1f", `"\u0000\u001F"`}, // upper-case hex
		{"a/b", `"a/b"`},               // '/' stays
		{"é\u2028\u2029", "\"é\u2028\u2029\""},
		{"a\xffb", "\"a\uFFFDb\""}, // invalid UTF-8
	}
	for _, tt := range tests {
		got := string(AppendString([]byte("x"), tt.in))
		if got != "x"+tt.want {
			t.Errorf("AppendString(%q) = %s, want %s", tt.in, got[1:], tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got[1:]), &back); err != nil {
			t.Errorf("AppendString(%q) = %s: not JSON: %v", tt.in, got[1:], err)
		}
	}
}
