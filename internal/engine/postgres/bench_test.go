package postgres

import (
	"context"
	"strconv"
	"testing"

	"github.com/ferrymq/ferry/internal/clock"
	"github.com/ferrymq/ferry/internal/engine"
	"github.com/ferrymq/ferry/internal/engine/enginetest"
)

// BenchmarkPeek: pages of a queue of 100,000 messages (in both slots, as
// rotations leave them): the first page of 50, a page of 50 by a cursor
// 80,000 messages in, and a filtered page that examines 5,000 messages
// and finds none.
func BenchmarkPeek(b *testing.B) {
	s := openFresh(b, clock.NewFake(enginetest.Start))
	ctx := context.Background()
	q := engine.Queue{Account: enginetest.Account, Name: "q", ARN: enginetest.ARN("q"), Settings: enginetest.Settings()}
	if _, _, err := s.CreateQueue(ctx, q); err != nil {
		b.Fatal(err)
	}
	const n = 100000
	fillPeekQueue(b, s, "q", n, false)
	var first int64
	if err := s.pool.QueryRow(ctx, `SELECT min(seq) FROM messages`).Scan(&first); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name          string
		req           engine.PeekRequest
		msgs, scanned int
	}{
		{"FirstPage50", engine.PeekRequest{Limit: 50}, 50, 50},
		{"DeepPage50", engine.PeekRequest{Limit: 50, After: strconv.FormatInt(first+80000, 10)}, 50, 50},
		{"Filtered5000", engine.PeekRequest{Limit: 50, Filter: engine.PeekFilter{BodyContains: "no such text"}}, 0, engine.PeekDefaultScan},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				page, err := s.Peek(ctx, enginetest.Account, "q", bc.req)
				if err != nil || len(page.Messages) != bc.msgs || page.Scanned != bc.scanned || page.Next == "" {
					b.Fatalf("Peek = %d messages, scanned %d, next %q, %v", len(page.Messages), page.Scanned, page.Next, err)
				}
			}
		})
	}
}
