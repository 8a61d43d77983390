package postgres

import "testing"

// A waiter told several times before it looks sees the earliest time told,
// once, and the holds of every tell, released together when it has looked;
// holds of tells it never looks at are released when it stops waiting. A
// note told twice (by this node, then by the notification) costs at most
// one more look, and never holds a step twice.
func TestWaiterTell(t *testing.T) {
	type tell struct {
		at   int64
		held bool
	}
	for _, tc := range []struct {
		name  string
		tells []tell
		want  int64
		holds int
	}{
		{name: "one note", tells: []tell{{at: 5}}, want: 5},
		{name: "this node's, then the notification's", tells: []tell{{at: 5, held: true}, {at: 5}}, want: 5, holds: 1},
		{name: "the notification's, then this node's", tells: []tell{{at: 5}, {at: 5, held: true}}, want: 5, holds: 1},
		{name: "the earliest wins", tells: []tell{{at: 9, held: true}, {at: 3}, {at: 7, held: true}}, want: 3, holds: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &waiter{signal: make(chan struct{}, 1)}
			released := 0
			for _, tl := range tc.tells {
				var hold func()
				if tl.held {
					hold = func() { released++ }
				}
				w.tell(tl.at, hold)
			}
			select {
			case <-w.signal:
			default:
				t.Fatal("not signalled")
			}
			at, rel, ok := w.take()
			if !ok || at != tc.want {
				t.Fatalf("take() = %d, %v, want %d", at, ok, tc.want)
			}
			if (rel != nil) != (tc.holds > 0) {
				t.Fatalf("release %v with %d holds", rel != nil, tc.holds)
			}
			if released != 0 {
				t.Fatalf("%d holds released before the poll looked", released)
			}
			if rel != nil {
				rel()
			}
			if released != tc.holds {
				t.Fatalf("%d holds released, want %d", released, tc.holds)
			}
			if _, rel, ok := w.take(); ok || rel != nil {
				t.Fatal("a second take saw the same tells")
			}
			// A tell the poll will not look at: its hold goes when it stops.
			w.tell(1, func() { released++ })
			w.drop()
			if released != tc.holds+1 {
				t.Fatalf("drop released %d holds, want 1", released-tc.holds)
			}
		})
	}
}
