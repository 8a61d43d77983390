package embedded

import (
	"bytes"
	"encoding/base64"
	"testing"
)

func TestHandleRoundTrip(t *testing.T) {
	s := newHandleSigner(bytes.Repeat([]byte{7}, 32))
	for _, r := range []receipt{{}, {qid: 1, seq: 2, gen: 3}, {qid: ^uint64(0), seq: 1 << 40, gen: ^uint64(0)}} {
		h := s.sign(r)
		if len(h) != handleLen || len(h) > 1024 {
			t.Fatalf("handle length %d", len(h))
		}
		got, ok := s.parse(h)
		if !ok || got != r {
			t.Fatalf("parse(sign(%+v)) = %+v, %v", r, got, ok)
		}
	}
}

func TestHandleTampered(t *testing.T) {
	s := newHandleSigner(bytes.Repeat([]byte{7}, 32))
	other := newHandleSigner(bytes.Repeat([]byte{8}, 32))
	r := receipt{qid: 10, seq: 20, gen: 30}
	h := s.sign(r)
	if _, ok := other.parse(h); ok {
		t.Fatal("a handle signed under another key parsed")
	}
	raw, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	// Every single-bit change of the raw handle is rejected.
	for i := range raw {
		for bit := range 8 {
			bad := append([]byte(nil), raw...)
			bad[i] ^= 1 << bit
			if _, ok := s.parse(base64.RawURLEncoding.EncodeToString(bad)); ok {
				t.Fatalf("flipping bit %d of byte %d went unnoticed", bit, i)
			}
		}
	}
	for _, bad := range []string{"", "=", h[:len(h)-1], h + "A", h[:10] + "!" + h[11:], base64.StdEncoding.EncodeToString(raw)} {
		if _, ok := s.parse(bad); ok {
			t.Fatalf("parse(%q) accepted", bad)
		}
	}
}
