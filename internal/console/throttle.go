package console

import (
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/ferrymq/ferry/internal/clock"
)

// Failed logins are limited per client address, so that a secret or the
// admin token cannot be guessed at the speed of the network.
const (
	maxLoginFailures = 10
	loginWindow      = time.Minute
	// maxTrackedAddrs bounds the addresses remembered; past it the
	// oldest windows are forgotten first.
	maxTrackedAddrs = 10000
)

type loginFailures struct {
	n     int
	since time.Time
}

// loginGuard counts failed logins per address over loginWindow.
type loginGuard struct {
	clock  clock.Clock
	mu     sync.Mutex
	byAddr map[string]*loginFailures
}

func newLoginGuard(clk clock.Clock) *loginGuard {
	return &loginGuard{clock: clk, byAddr: map[string]*loginFailures{}}
}

// clientAddr is the address a request came from, without its port.
func clientAddr(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// allowed reports whether addr may try to log in now.
func (g *loginGuard) allowed(addr string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.byAddr[addr]
	if f == nil {
		return true
	}
	if g.clock.Now().Sub(f.since) >= loginWindow {
		delete(g.byAddr, addr)
		return true
	}
	return f.n < maxLoginFailures
}

// failed counts a failed login of addr.
func (g *loginGuard) failed(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.clock.Now()
	f := g.byAddr[addr]
	if f == nil || now.Sub(f.since) >= loginWindow {
		if len(g.byAddr) >= maxTrackedAddrs {
			g.forgetOldestLocked(now)
		}
		f = &loginFailures{since: now}
		g.byAddr[addr] = f
	}
	f.n++
}

// forgetOldestLocked drops the windows that have ended, or, when none
// has, the oldest.
func (g *loginGuard) forgetOldestLocked(now time.Time) {
	var oldest string
	for a, f := range g.byAddr {
		if now.Sub(f.since) >= loginWindow {
			delete(g.byAddr, a)
			continue
		}
		if oldest == "" || f.since.Before(g.byAddr[oldest].since) {
			oldest = a
		}
	}
	if len(g.byAddr) >= maxTrackedAddrs && oldest != "" {
		delete(g.byAddr, oldest)
	}
}

// succeeded forgets addr's failures.
func (g *loginGuard) succeeded(addr string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byAddr, addr)
}
