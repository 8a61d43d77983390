package protocol

import (
	"testing"

	"github.com/google/uuid"
)

// next formats an id into memory of its own.
func (r *requestIDs) next() string {
	return r.format(new([requestIDLen]byte))
}

func TestRequestIDsAreUniqueV4UUIDs(t *testing.T) {
	t.Parallel()
	var ids, other requestIDs
	seen := map[string]bool{}
	for range 10000 {
		id := ids.next()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != id {
			t.Fatalf("%q is not a lowercase version 4 UUID: %v", id, err)
		}
		if seen[id] {
			t.Fatalf("%q handed out twice", id)
		}
		seen[id] = true
	}
	if id := other.next(); seen[id] {
		t.Fatalf("a second generator repeated %q", id)
	}
}

func BenchmarkRequestID(b *testing.B) {
	b.Run("uuid", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = uuid.NewString()
		}
	})
	b.Run("counter", func(b *testing.B) {
		var ids requestIDs
		b.ReportAllocs()
		for b.Loop() {
			_ = ids.next()
		}
	})
}
