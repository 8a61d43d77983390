package embedded

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// holds reports whether m is a member at the place its slot names.
func (s *orderedSet) holds(m *message) bool {
	switch sl := int(*s.slot(m)); {
	case sl >= 0:
		return sl < s.spill.len() && s.spill.items[sl] == m
	case sl <= -2:
		i := -2 - sl
		return i >= s.head && i < len(s.items) && s.items[i] == m
	}
	return false
}

// check verifies the set's invariants: members in key order, every slot
// right, head and tail members, the count, the garbage bounded.
func (s *orderedSet) check() error {
	if s.live == 0 {
		if len(s.items) != 0 || s.head != 0 {
			return fmt.Errorf("empty set with %d items from %d", len(s.items), s.head)
		}
	} else if s.items[s.head] == nil || s.items[len(s.items)-1] == nil {
		return fmt.Errorf("head %d or tail %d is no member", s.head, len(s.items)-1)
	}
	n := 0
	var prev *message
	for i, m := range s.items {
		if m == nil {
			continue
		}
		if i < s.head {
			return fmt.Errorf("member %d before head %d", i, s.head)
		}
		if *s.slot(m) != int32(-2-i) {
			return fmt.Errorf("message %d thinks it is at %d, is at %d", m.seq, -2-*s.slot(m), i)
		}
		if prev != nil && s.key(m).less(s.key(prev)) {
			return fmt.Errorf("order broken at %d", i)
		}
		prev = m
		n++
	}
	if n != s.live {
		return fmt.Errorf("%d members, counted %d", n, s.live)
	}
	// Memory stays in proportion to the members.
	if garbage := len(s.items) - s.live; garbage > s.live+orderSlack {
		return fmt.Errorf("%d removed entries kept for %d members", garbage, s.live)
	}
	for i, m := range s.spill.items {
		if int(*s.slot(m)) != i {
			return fmt.Errorf("spilled message %d thinks it is at %d, is at %d", m.seq, *s.slot(m), i)
		}
		if i > 0 && s.spill.less(m, s.spill.items[(i-1)/2]) {
			return fmt.Errorf("spill order broken at %d", i)
		}
	}
	return nil
}

// TestOrderedSet drives the set with the arrivals it is built for and the
// ones it must survive, checking it against a sorted model after every step.
func TestOrderedSet(t *testing.T) {
	tests := []struct {
		name string
		// late is how far before the newest a new message's key may fall.
		late     int64
		removeAt func(r *rand.Rand, n int) int // which member (by rank) leaves
	}{
		{"in order, oldest leaves", 0, func(*rand.Rand, int) int { return 0 }},
		{"in order, any leaves", 0, func(r *rand.Rand, n int) int { return r.IntN(n) }},
		{"slightly late, oldest leaves", 40, func(*rand.Rand, int) int { return 0 }},
		{"slightly late, newest leaves", 40, func(_ *rand.Rand, n int) int { return n - 1 }},
		{"far late, any leaves", 5000, func(r *rand.Rand, n int) int { return r.IntN(n) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, uint64(tc.late)))
			s := newAgeOrder()
			var model []*message
			var now int64 = 1 << 20
			seq := uint64(0)
			for step := range 20000 {
				// Grow to a few thousand, shrink to none, grow again.
				grow := (step/3000)%2 == 0
				if len(model) == 0 || (grow && r.IntN(10) < 7) || (!grow && r.IntN(10) < 3) {
					now += int64(r.IntN(3))
					seq++
					m := &message{seq: seq, sentAt: now - r.Int64N(tc.late+1), ageSlot: -1}
					s.push(m)
					i, _ := slices.BinarySearchFunc(model, m, func(a, b *message) int {
						if s.key(a).less(s.key(b)) {
							return -1
						}
						return 1
					})
					model = slices.Insert(model, i, m)
				} else {
					i := tc.removeAt(r, len(model))
					m := model[i]
					s.remove(m)
					if s.has(m) {
						t.Fatalf("step %d: message %d still a member", step, m.seq)
					}
					model = slices.Delete(model, i, i+1)
				}
				if err := s.check(); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				if s.len() != len(model) {
					t.Fatalf("step %d: len %d, want %d", step, s.len(), len(model))
				}
				if got := s.min(); len(model) > 0 && got != model[0] {
					t.Fatalf("step %d: min is %d, want %d", step, got.seq, model[0].seq)
				}
			}
			if tc.late <= 40 && s.spill.moves > 0 {
				t.Errorf("messages at most 40 late were spilled (%d heap moves)", s.spill.moves)
			}
		})
	}
}
