package console

import (
	"sync"
	"sync/atomic"
)

// Changes wakes the event streams when something may have changed (an
// API request was answered, the console acted), so that an open page
// shows a send, a delete or a purge at once rather than at the next
// periodic check. Changed is on the path of every request: with no
// stream waiting it is one atomic load, and however busy the server it
// closes one channel per wait of the streams, not one per request.
type Changes struct {
	armed atomic.Bool // a stream waits on ch
	mu    sync.Mutex
	ch    chan struct{} // closed at the next change
}

// NewChanges returns the news of changes for Options.Changes.
func NewChanges() *Changes { return &Changes{ch: make(chan struct{})} }

// Changed wakes the streams waiting for a change.
func (c *Changes) Changed() {
	if !c.armed.Load() || !c.armed.CompareAndSwap(true, false) {
		return
	}
	c.mu.Lock()
	close(c.ch)
	c.ch = make(chan struct{})
	c.mu.Unlock()
}

// wait returns a channel closed at the next change.
func (c *Changes) wait() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.armed.Store(true)
	return c.ch
}
