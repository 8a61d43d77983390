package embedded

// The in-memory index of one queue. Only metadata lives here; bodies stay in
// the store and are read when a receive hands a message out, so memory per
// message is a small constant whatever the body size.

type msgStatus uint8

const (
	statusDelayed  msgStatus = iota // never visible yet; in the timer heap
	statusReady                     // visible; in the ready list
	statusInflight                  // received, hidden; in the timer heap
	// statusDeleting (FIFO): deleted, the delete not yet durable; still in
	// its group, blocking it, counted in flight, in no heap; in the age order.
	statusDeleting
)

// message is one index entry. Its fields are sized so that a million
// stored messages cost as little memory as possible (96 bytes, a 96-byte
// allocation class); every entry costs a map slot and an age-heap slot on
// top.
type message struct {
	seq            uint64
	gen            uint64 // generation of the latest receive; 0 if never received
	sentAt         int64  // unix nanoseconds
	deadline       int64  // when a delayed or in-flight message becomes visible
	receivedAt     int64  // latest receive, for the visibility limit
	firstReceiveAt int64
	receiveCount   uint32 // saturates (handOutLocked)
	status         msgStatus
	// touched (FIFO) records a visibility change since the latest receive,
	// which makes a receive attempt no longer repeatable.
	touched    bool
	moved      bool     // a redrive moved it here: see queue.movedIn (stats.go)
	history    bool     // it has a history record (history.go)
	pending    bool     // its state record holds its latest receive's story event (history.go)
	timerSlot  int32    // index in the timer heap, -1 when absent
	ageSlot    int32    // place in the age order, -1 when absent (order.go)
	oldSlot    int32    // place in the oldest order, -1 when absent (stats.go)
	prev, next *message // ready list, or the group's list on a FIFO queue
	grp        *group   // FIFO: the message's group (kept while taken out)
}

func (m *message) state() msgState {
	return msgState{
		receiveCount:   uint64(m.receiveCount),
		gen:            m.gen,
		firstReceiveAt: m.firstReceiveAt,
		receivedAt:     m.receivedAt,
		visibleAt:      m.deadline,
	}
}

// readyList is an intrusive FIFO of visible messages: O(1) push, pop and
// removal from the middle (a delete or visibility change of a message whose
// visibility had already expired).
type readyList struct {
	head, tail *message
	n          int
}

func (l *readyList) pushBack(m *message) {
	m.prev, m.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = m
	} else {
		l.head = m
	}
	l.tail = m
	l.n++
}

// pushFront puts back at the head a message taken out of it, so that it
// keeps its place in the ready order.
func (l *readyList) pushFront(m *message) {
	m.prev, m.next = nil, l.head
	if l.head != nil {
		l.head.prev = m
	} else {
		l.tail = m
	}
	l.head = m
	l.n++
}

func (l *readyList) remove(m *message) {
	if m.prev != nil {
		m.prev.next = m.next
	} else {
		l.head = m.next
	}
	if m.next != nil {
		m.next.prev = m.prev
	} else {
		l.tail = m.prev
	}
	m.prev, m.next = nil, nil
	l.n--
}

func (l *readyList) popFront() *message {
	m := l.head
	if m != nil {
		l.remove(m)
	}
	return m
}

// msgHeap is a binary min-heap of messages in which every message knows its
// slot, so that removal and re-keying are O(log n).
type msgHeap struct {
	items []*message
	less  func(a, b *message) bool
	slot  func(m *message) *int32
	moves int // swaps made so far (see orderedSet.moves)
}

func newTimerHeap() msgHeap {
	return msgHeap{
		less: func(a, b *message) bool {
			if a.deadline != b.deadline {
				return a.deadline < b.deadline
			}
			return a.seq < b.seq
		},
		slot: func(m *message) *int32 { return &m.timerSlot },
	}
}

func (h *msgHeap) len() int { return len(h.items) }

func (h *msgHeap) min() *message {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *msgHeap) push(m *message) {
	*h.slot(m) = int32(len(h.items))
	h.items = append(h.items, m)
	h.up(len(h.items) - 1)
}

func (h *msgHeap) pop() *message {
	m := h.min()
	if m != nil {
		h.remove(m)
	}
	return m
}

func (h *msgHeap) remove(m *message) {
	i := int(*h.slot(m))
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	*h.slot(m) = -1
	if i != last {
		h.fix(h.items[i])
	}
}

// fix restores order after m's key changed.
func (h *msgHeap) fix(m *message) {
	i := int(*h.slot(m))
	if !h.down(i) {
		h.up(i)
	}
}

func (h *msgHeap) swap(i, j int) {
	h.moves++
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.slot(h.items[i]) = int32(i)
	*h.slot(h.items[j]) = int32(j)
}

func (h *msgHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *msgHeap) down(i int) bool {
	start := i
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			break
		}
		h.swap(i, c)
		i = c
	}
	return i > start
}
