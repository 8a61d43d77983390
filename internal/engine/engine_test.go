package engine

import "testing"

func TestFormatSequenceNumber(t *testing.T) {
	for _, tc := range []struct {
		seq  uint64
		want string
	}{
		{0, "00000000000000000000"},
		{1<<40 + 7, "00000001099511627783"},
		{^uint64(0), "18446744073709551615"},
	} {
		if got := FormatSequenceNumber(tc.seq); got != tc.want {
			t.Errorf("FormatSequenceNumber(%d) = %s, want %s", tc.seq, got, tc.want)
		}
	}
}
