package postgres

import (
	"context"
	"sync"

	"github.com/ferrymq/ferry/internal/engine"
)

// ViewQueue serves the few settings every message action reads from a
// cache of the node's own, so that such an action costs one round trip.
// A change to a queue (create, update, purge, delete) drops its entry at
// once on the node that made it, and on the others when its notification
// arrives ("view:" + the queue's key, sent in the changing transaction):
// another node's view lags a change by that notification's trip, as SQS's
// attribute changes take a while to show. When the listening connection
// is lost, notifications may be too, and every entry is dropped.

// views is the cache.
type views struct {
	mu  sync.Mutex
	m   map[string]engine.Queue
	gen uint64 // bumped by every drop: a read that began before is not kept
}

func newViews() *views { return &views{m: map[string]engine.Queue{}} }

// viewKey names a queue in the cache and in "view:" notifications.
func viewKey(account, name string) string { return account + "/" + name }

// viewNote is the notification payload that drops key on every node.
func viewNote(key string) string { return "view:" + key }

func (v *views) get(key string) (engine.Queue, uint64, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	q, ok := v.m[key]
	return q, v.gen, ok
}

// put keeps q unless something was dropped since gen was read.
func (v *views) put(key string, q engine.Queue, gen uint64) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if gen == v.gen {
		v.m[key] = q
	}
}

func (v *views) drop(key string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.m, key)
	v.gen++
}

func (v *views) dropAll() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.m)
	v.gen++
}

// ViewQueue implements engine.Backend.
func (s *Store) ViewQueue(ctx context.Context, account, name string) (engine.Queue, error) {
	key := viewKey(account, name)
	q, gen, ok := s.views.get(key)
	if ok {
		if err := s.enter(); err != nil {
			return engine.Queue{}, err
		}
		s.leave()
		return q, nil
	}
	q, err := s.GetQueue(ctx, account, name)
	if err != nil {
		return engine.Queue{}, err
	}
	s.views.put(key, q, gen)
	return q, nil
}
