package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ferrymq/ferry/internal/clock"
)

// Controllable time (ferry serve --clock-control): an operator freezes,
// moves forward or resumes this Ferry's clock at /_ferry/clock, and
// everything timed follows it — visibility timeouts, delays, long polls,
// retention, deduplication windows, purges, move tasks, SNS retries,
// metric datapoints and alarm evaluation — while I/O timeouts and SigV4's
// skew check stay on the wall clock (clock.WallOf).
//
// The clock is this node's: on a store other nodes share, each node keeps
// its own, and timestamps written by nodes whose clocks differ disagree.
// Moving one clock of a cluster is for a test cluster whose nodes are all
// moved alike (the README says so).

// errClockOff answers the clock's paths when the flag is off.
const errClockOff = "clock control is off; start Ferry with --clock-control (FERRY_CLOCK_CONTROL)"

// Clock returns the controlled clock this Ferry runs on, for Go tests that
// drive it in-process; false without Config.ClockControl.
func (s *Server) Clock() (*clock.Controlled, bool) {
	c, ok := s.cfg.Clock.(*clock.Controlled)
	return c, ok && s.cfg.ClockControl
}

// clockState is the clock's answer at every /_ferry/clock path.
type clockState struct {
	Now    string `json:"now"` // RFC 3339, nanoseconds, UTC
	Frozen bool   `json:"frozen"`
	Offset string `json:"offset"` // the clock minus the wall clock, as a Go duration
}

func newClockState(st clock.State) clockState {
	return clockState{Now: st.Now.UTC().Format(time.RFC3339Nano), Frozen: st.Frozen, Offset: st.Offset.String()}
}

// registerClock serves the clock's paths: the state and the moves with
// the flag on, a 404 that names the flag without it.
func (s *Server) registerClock(mux *routes) {
	c, on := s.Clock()
	handle := func(pattern string, h func(*http.Request) (clock.State, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			if !on {
				writeJSON(w, http.StatusNotFound, map[string]string{"error": errClockOff})
				return
			}
			st, err := h(r)
			var bad badRequest
			switch {
			case errors.As(err, &bad):
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			case errors.Is(err, clock.ErrBackwards):
				writeJSON(w, http.StatusConflict, map[string]string{"error": err.Error()})
			case err != nil:
				// The client left, or the server stops: the clock stays where
				// the move got to.
				writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error()})
			default:
				writeJSON(w, http.StatusOK, newClockState(st))
			}
		})
	}
	handle("GET /_ferry/clock", func(*http.Request) (clock.State, error) { return c.State(), nil })
	handle("POST /_ferry/clock/freeze", func(*http.Request) (clock.State, error) { return c.Freeze(), nil })
	handle("POST /_ferry/clock/resume", func(*http.Request) (clock.State, error) { return c.Resume(), nil })
	handle("POST /_ferry/clock/set", func(r *http.Request) (clock.State, error) {
		var body struct {
			Time string `json:"time"`
		}
		if err := decodeBody(r, &body); err != nil {
			return clock.State{}, err
		}
		t, err := time.Parse(time.RFC3339Nano, body.Time)
		if err != nil {
			return clock.State{}, badRequest{fmt.Errorf("time %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", body.Time)}
		}
		return c.Set(s.moveContext(r), t)
	})
	handle("POST /_ferry/clock/advance", func(r *http.Request) (clock.State, error) {
		var body struct {
			Duration string `json:"duration"`
		}
		if err := decodeBody(r, &body); err != nil {
			return clock.State{}, err
		}
		d, err := clock.ParseDuration(body.Duration)
		if err != nil {
			return clock.State{}, badRequest{err}
		}
		if d < 0 {
			return clock.State{}, fmt.Errorf("advance by %s: %w", body.Duration, clock.ErrBackwards)
		}
		return c.Advance(s.moveContext(r), d)
	})
}

// moveContext ends a move when its client leaves or the server stops.
func (s *Server) moveContext(r *http.Request) context.Context {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.drain, cancel)
	context.AfterFunc(ctx, func() { stop() })
	return ctx
}

// badRequest is input the clock's paths refuse with 400.
type badRequest struct{ error }

func (b badRequest) Unwrap() error { return b.error }

// decodeBody reads an admin path's body: one JSON object of known fields,
// of at most 64 KiB.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest{fmt.Errorf("body: %w", err)}
	}
	if dec.More() {
		return badRequest{errors.New("body: one JSON object per request")}
	}
	return nil
}

// clockCollector is the offset's gauge with clock control; nil (no
// collector) without.
func (s *Server) clockCollector() prometheus.Collector {
	if c, ok := s.Clock(); ok {
		return newClockCollector(c)
	}
	return nil
}

// clockCollector reports how far a controlled clock reads from the wall
// clock, so that a dashboard shows a moved clock.
type clockCollector struct {
	c    *clock.Controlled
	desc *prometheus.Desc
}

func newClockCollector(c *clock.Controlled) *clockCollector {
	return &clockCollector{c: c, desc: prometheus.NewDesc("ferry_clock_offset_seconds",
		"How far Ferry's controlled clock reads ahead of the wall clock (--clock-control).", nil, nil)}
}

func (cc *clockCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cc.desc }

func (cc *clockCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(cc.desc, prometheus.GaugeValue, cc.c.Offset().Seconds())
}
