package embedded

// orderedSet keeps messages by a key that never changes and in which new
// messages nearly always come last: send time for retention, seq for the
// oldest-message age. A binary heap would cost every delete of an old
// message a sift through log n levels of the whole backlog, each level a
// cache miss once the backlog outgrows the CPU's caches; here a delete is a
// nil in a sorted slice and the minimum is its first entry, O(1) amortized
// at any depth.
//
// Concurrent sends enter the index in the order their writes finish, not
// their seqs', so a new message may belong a little before the last one:
// it is shifted into place if that is within orderWindow entries of the
// end. One that belongs further back (a message moved in by a redrive
// keeps its send time) goes to spill, a heap, which is empty when messages
// arrive in order.
//
// A message's slot says where it is: -1 nowhere, >= 0 its index in spill,
// <= -2 its index in items, encoded as -2-index.
type orderedSet struct {
	// items[head:] holds the members in key order, with nils where members
	// left; items[head] and the last item are members (when there are any).
	items []*message
	head  int
	live  int // members in items
	spill msgHeap
	key   func(m *message) orderKey
	slot  func(m *message) *int32
	// moves counts the entries written to a new place (shifts, compactions,
	// heap swaps): the work that must not grow with the number of members.
	moves int
}

type orderKey struct {
	at  int64
	seq uint64
}

func (a orderKey) less(b orderKey) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// orderWindow bounds the entries a late message is shifted past; it covers
// the messages of many concurrent send batches.
const orderWindow = 256

// orderSlack is the garbage a compaction leaves room for on top of one
// entry a member, so that small sets do not compact at every removal.
const orderSlack = 64

func newOrderedSet(key func(m *message) orderKey, slot func(m *message) *int32) orderedSet {
	s := orderedSet{key: key, slot: slot}
	s.spill = msgHeap{
		less: func(a, b *message) bool { return key(a).less(key(b)) },
		slot: slot,
	}
	return s
}

func (s *orderedSet) len() int { return s.live + s.spill.len() }

// work is the number of moves made so far.
func (s *orderedSet) work() int { return s.moves + s.spill.moves }

// has reports whether m is a member.
func (s *orderedSet) has(m *message) bool { return *s.slot(m) != -1 }

// grow makes room for n members (startup).
func (s *orderedSet) grow(n int) {
	if s.len() == 0 {
		s.items = make([]*message, 0, n)
		s.head = 0
	}
}

func (s *orderedSet) min() *message {
	var m *message
	if s.live > 0 {
		m = s.items[s.head]
	}
	if sm := s.spill.min(); sm != nil && (m == nil || s.key(sm).less(s.key(m))) {
		m = sm
	}
	return m
}

func (s *orderedSet) put(m *message, i int) {
	s.items[i] = m
	*s.slot(m) = int32(-2 - i)
}

func (s *orderedSet) push(m *message) {
	k := s.key(m)
	n := len(s.items)
	if s.live == 0 || !k.less(s.key(s.items[n-1])) {
		s.items = append(s.items, nil)
		s.put(m, n)
		s.live++
		return
	}
	// Late: find the last member not after m within the window.
	lo := max(s.head, n-orderWindow)
	i := n - 1
	for i >= lo && (s.items[i] == nil || k.less(s.key(s.items[i]))) {
		i--
	}
	if i < lo && lo > s.head {
		s.spill.push(m)
		return
	}
	// m goes at i+1 (at the front if every member is after it).
	if i+1 == s.head && s.head > 0 {
		s.head--
		s.put(m, s.head)
		s.live++
		s.moves++
		return
	}
	s.items = append(s.items, nil)
	for j := n; j > i+1; j-- {
		if p := s.items[j-1]; p != nil {
			s.put(p, j)
			s.moves++
		} else {
			s.items[j] = nil
		}
	}
	s.put(m, i+1)
	s.live++
}

func (s *orderedSet) remove(m *message) {
	sl := s.slot(m)
	if *sl >= 0 {
		s.spill.remove(m)
		return
	}
	i := int(-2 - *sl)
	s.items[i] = nil
	*sl = -1
	s.live--
	for s.head < len(s.items) && s.items[s.head] == nil {
		s.head++
	}
	for n := len(s.items); n > s.head && s.items[n-1] == nil; n-- {
		s.items = s.items[:n-1]
	}
	if s.live == 0 {
		s.items, s.head = s.items[:0], 0
		if cap(s.items) > 4*orderSlack {
			s.items = nil // the backlog is gone: so is its room
		}
		return
	}
	if len(s.items)-s.live > s.live+orderSlack {
		s.compact()
	}
}

// compact moves the members to the front of items, in order. It runs once
// the garbage (removed entries, and the room before head) outgrows the
// members, so that its cost, one move a member, is paid for by as many
// removals. A set that shrank much gets a smaller slice.
func (s *orderedSet) compact() {
	dst := s.items
	if cap(dst) > 4*(s.live+orderSlack) {
		dst = make([]*message, 0, 2*s.live)
	}
	dst = dst[:s.live]
	j := 0
	for _, m := range s.items[s.head:] {
		if m != nil {
			dst[j] = m
			*s.slot(m) = int32(-2 - j)
			j++
		}
	}
	clear(s.items[j:len(s.items)])
	s.items, s.head = dst, 0
	s.moves += j
}

// newAgeOrder orders by send time: retention is queue-wide, so this is
// also expiry order.
func newAgeOrder() orderedSet {
	return newOrderedSet(func(m *message) orderKey { return orderKey{m.sentAt, m.seq} },
		func(m *message) *int32 { return &m.ageSlot })
}
