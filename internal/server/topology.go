package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ferrymq/ferry/internal/protocol"
	"github.com/ferrymq/ferry/internal/region"
	"github.com/ferrymq/ferry/internal/topology"
)

// A topology file (Config.Init) is applied at start, before the listener
// answers anything, and GET /_ferry/export writes the topology back in the
// same format. Both go through the services' own actions, in-process, so
// that a file is checked exactly as an SDK's requests would be.

// caller runs the services' actions in-process for the topology package.
type caller struct {
	api  *protocol.Handler
	host string // the listener's address: queue URLs point at it
	tls  bool
}

func (c caller) Call(ctx context.Context, account, region, service, action string, in, out any) error {
	info := protocol.RequestInfo{Host: c.host, TLS: c.tls, Account: account, Region: region}
	return c.api.Invoke(ctx, info, service, action, in, out)
}

func (s *Server) caller() caller {
	return caller{api: s.api, host: s.Addr(), tls: s.scheme == "https"}
}

// ApplyTopology makes the server hold what t describes (see
// topology.Apply); a file without an account or region lands in the
// server's own.
func (s *Server) ApplyTopology(ctx context.Context, t *topology.Topology) (*topology.Result, error) {
	return topology.Apply(ctx, s.caller(), t, topology.Place{Account: s.cfg.Account, Region: s.cfg.Region})
}

// ExportTopology reads the topology of an account in a region ("": the
// server's own).
func (s *Server) ExportTopology(ctx context.Context, account, reg string) (*topology.Topology, error) {
	if account == "" {
		account = s.cfg.Account
	}
	if reg == "" {
		reg = s.cfg.Region
	}
	return topology.Export(ctx, s.caller(), topology.Place{Account: account, Region: reg})
}

// applyInit applies Config.Init, once the services are up and before
// anything is served.
func (s *Server) applyInit(ctx context.Context) error {
	if s.cfg.Init == nil {
		return nil
	}
	res, err := s.ApplyTopology(ctx, s.cfg.Init)
	if err != nil {
		return fmt.Errorf("apply topology: %w", err)
	}
	for _, c := range res.Changes {
		s.cfg.Logger.Info("topology", "file", s.cfg.Init.Pos.File, "change", c)
	}
	s.cfg.Logger.Info("topology applied", "file", s.cfg.Init.Pos.File, "changes", len(res.Changes))
	return nil
}

// ferryExport is GET /_ferry/export: the topology of the server's account
// and region, or of ?account= and ?region=, as ?format=yaml (the default)
// or json.
func (s *Server) ferryExport(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	account, ok := accountParam(w, q)
	if !ok {
		return
	}
	reg, format := q.Get("region"), q.Get("format")
	if q.Has("region") && !region.Valid(reg) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("region %q is not a region", reg)})
		return
	}
	contentType := "application/yaml"
	switch format {
	case "", topology.FormatYAML:
		format = topology.FormatYAML
	case topology.FormatJSON:
		contentType = "application/json"
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("format %q: want yaml or json", format)})
		return
	}
	t, err := s.ExportTopology(r.Context(), account, reg)
	if err != nil {
		s.cfg.Logger.Error("export topology", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": "export: " + err.Error()})
		return
	}
	body, err := topology.Encode(t, format)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": err.Error()})
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Write(body)
}
