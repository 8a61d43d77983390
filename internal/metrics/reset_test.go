package metrics

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/region"
)

// TestReset: a reset of one account forgets its series of every region on
// the node that resets, with the other nodes' points of them, and deletes
// them in the store of every node; another node forgets its own through
// Forget. The other account's series are whole, and nothing comes back at
// a flush or a load. A reset of every account leaves nothing.
func TestReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	db := newFakeDB(clk)
	a, b := db.node("a"), db.node("b")
	sa, sb := New(Options{Clock: clk, Account: acct}), New(Options{Clock: clk, Account: acct})
	west := region.Owner(acct, "eu-west-1", "us-east-1")
	q := Queue("q")
	sa.Record(acct, NamespaceSQS, MessagesSent, q, 1)
	sa.Record(west, NamespaceSQS, MessagesSent, q, 2)
	sa.Record(other, NamespaceSQS, MessagesSent, q, 3)
	sb.Record(acct, NamespaceSQS, MessagesDeleted, q, 4)
	sb.Record(other, NamespaceSQS, MessagesDeleted, q, 5)
	nodes := []struct {
		s *Store
		n *fakeNode
	}{{sa, a}, {sb, b}}
	for _, f := range nodes {
		if err := f.s.Flush(ctx, f.n, true); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range nodes {
		if err := f.s.LoadPeers(ctx, f.n); err != nil {
			t.Fatal(err)
		}
	}
	ofAcct := func(owner string) bool {
		account, _ := region.Split(owner, "us-east-1")
		return account == acct
	}
	// What other keeps: its series on both nodes, each node's through the
	// overlay on the other.
	kept := []SeriesKey{{other, NamespaceSQS, MessagesDeleted, q}, {other, NamespaceSQS, MessagesSent, q}}
	wantSeries := func(s *Store, name string, want []SeriesKey) {
		t.Helper()
		if got := s.Series(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s's series = %+v, want %+v", name, got, want)
		}
	}

	if n, err := sa.Reset(ctx, a, ofAcct); n != 2 || err != nil {
		t.Fatalf("Reset of %s = %d, %v; want its 2 series (both regions)", acct, n, err)
	}
	wantSeries(sa, "a", kept)
	for _, m := range []string{MessagesSent, MessagesDeleted} {
		for _, owner := range []string{acct, west} {
			if dps := sa.Datapoints(owner, NamespaceSQS, m, q, t0.Add(-time.Hour), t0.Add(time.Hour)); dps != nil {
				t.Errorf("a reads %s %s after the reset: %+v", owner, m, dps)
			}
		}
	}
	stored := func() []engine.MetricPoint {
		t.Helper()
		ps, err := a.MetricPoints(ctx, 0)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	for _, p := range stored() {
		if p.Account != other {
			t.Errorf("stored after the reset: %+v", p)
		}
	}
	if ps := stored(); len(ps) != 2 {
		t.Errorf("stored after the reset: %+v, want other's 2 points", ps)
	}

	// b hears of the reset and forgets its own series of acct.
	if n := sb.Forget(ofAcct); n != 1 {
		t.Errorf("b's Forget = %d, want 1", n)
	}
	wantSeries(sb, "b", kept)
	for _, f := range nodes {
		if err := f.s.Flush(ctx, f.n, true); err != nil {
			t.Fatal(err)
		}
	}
	if ps := stored(); len(ps) != 2 {
		t.Errorf("stored after the flushes: %+v, want other's 2 points", ps)
	}
	loaded := New(Options{Clock: clk, Account: acct})
	if err := loaded.Load(ctx, a); err != nil {
		t.Fatal(err)
	}
	wantSeries(loaded, "a restarted node", kept)

	// A reset of every account.
	if n, err := sa.Reset(ctx, a, nil); n != 1 || err != nil {
		t.Fatalf("Reset of every account = %d, %v; want a's 1 series", n, err)
	}
	wantSeries(sa, "a after a reset of every account", []SeriesKey{})
	if ps := stored(); len(ps) != 0 {
		t.Errorf("stored after a reset of every account: %+v", ps)
	}
}
