package bench

import "testing"

func TestPerSync(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name     string
		from, to syncMark
		want     *float64
	}{
		{"commits over syncs", syncMark{10, 4, true}, syncMark{40, 14, true}, f(3)},
		{"no sync meanwhile", syncMark{10, 4, true}, syncMark{10, 4, true}, nil},
		{"not published at the start", syncMark{}, syncMark{40, 14, true}, nil},
		{"not published at the end", syncMark{10, 4, true}, syncMark{}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.from.perSync(tc.to)
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("perSync = %v, want %v", got, tc.want)
			}
		})
	}
}
