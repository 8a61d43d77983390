package uuidv4

import (
	"testing"

	"github.com/google/uuid"
)

func TestEncode(t *testing.T) {
	t.Parallel()
	for _, u := range [][16]byte{
		{},
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10},
	} {
		var got [Len]byte
		Encode(&got, u)
		parsed, err := uuid.Parse(string(got[:]))
		if err != nil {
			t.Fatalf("%x: %q does not parse: %v", u, got, err)
		}
		if parsed.Version() != 4 || parsed.Variant() != uuid.RFC4122 {
			t.Errorf("%x: %q is version %d, variant %v", u, got, parsed.Version(), parsed.Variant())
		}
		want := uuid.UUID(u)
		want[6] = want[6]&0x0f | 0x40
		want[8] = want[8]&0x3f | 0x80
		if string(got[:]) != want.String() {
			t.Errorf("%x: %q, want %q", u, got, want.String())
		}
	}
}
