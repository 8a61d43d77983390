package handle

import (
	"bytes"
	"encoding/base64"
	"testing"
)

func TestHandleRoundTrip(t *testing.T) {
	s := NewSigner(bytes.Repeat([]byte{7}, 32))
	for _, r := range []Receipt{{}, {Queue: 1, Seq: 2, Gen: 3}, {Queue: ^uint64(0), Seq: 1 << 40, Gen: ^uint64(0)}} {
		h := s.Sign(r)
		if len(h) != Len || len(h) > 1024 {
			t.Fatalf("handle length %d", len(h))
		}
		got, ok := s.Parse(h)
		if !ok || got != r {
			t.Fatalf("parse(sign(%+v)) = %+v, %v", r, got, ok)
		}
	}
}

func TestHandleTampered(t *testing.T) {
	s := NewSigner(bytes.Repeat([]byte{7}, 32))
	other := NewSigner(bytes.Repeat([]byte{8}, 32))
	r := Receipt{Queue: 10, Seq: 20, Gen: 30}
	h := s.Sign(r)
	if _, ok := other.Parse(h); ok {
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
			if _, ok := s.Parse(base64.RawURLEncoding.EncodeToString(bad)); ok {
				t.Fatalf("flipping bit %d of byte %d went unnoticed", bit, i)
			}
		}
	}
	for _, bad := range []string{"", "=", h[:len(h)-1], h + "A", h[:10] + "!" + h[11:], base64.StdEncoding.EncodeToString(raw)} {
		if _, ok := s.Parse(bad); ok {
			t.Fatalf("parse(%q) accepted", bad)
		}
	}
}

func TestLen(t *testing.T) {
	if want := base64.RawURLEncoding.EncodedLen(handleRawLen); Len != want {
		t.Fatalf("Len = %d, want %d", Len, want)
	}
}
