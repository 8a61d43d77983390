package server

import (
	"fmt"
	"net/http"

	"github.com/ferrymq/ferry/internal/faults"
	"github.com/ferrymq/ferry/internal/sqs"
)

// Fault injection's admin endpoints, a thin layer over faults.Set: rules
// live in this node's memory (on a shared PostgreSQL store, each node has
// its own).

// Faults is the set of fault rules; nil when fault injection is off.
func (s *Server) Faults() *faults.Set { return s.faults }

// sqsError reports whether code names an error of SQS's catalogue, for
// rules to name.
func sqsError(code string) bool {
	_, ok := sqs.ErrorByCode(code)
	return ok
}

// faultsOff answers a fault endpoint while fault injection is off.
func (s *Server) faultsOff(w http.ResponseWriter) bool {
	if s.faults != nil {
		return false
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"error": "fault injection is off; start Ferry with --fault-injection (FERRY_FAULT_INJECTION)"})
	return true
}

// addFault is POST /_ferry/faults: a rule as JSON, answered with the rule
// and its id.
func (s *Server) addFault(w http.ResponseWriter, r *http.Request) {
	if s.faultsOff(w) {
		return
	}
	var rule faults.Rule
	if err := decodeBody(r, &rule); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("a fault rule is a JSON object: %v", err)})
		return
	}
	if rule.ID != "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "id is given by Ferry, not by the rule"})
		return
	}
	st, err := s.faults.Add(rule)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	s.cfg.Logger.Info("fault rule added", "id", st.ID, "service", st.Service())
	writeJSON(w, http.StatusCreated, st)
}

// listFaults is GET /_ferry/faults.
func (s *Server) listFaults(w http.ResponseWriter, r *http.Request) {
	if s.faultsOff(w) {
		return
	}
	writeJSON(w, http.StatusOK, s.faults.List())
}

// clearFaults is DELETE /_ferry/faults.
func (s *Server) clearFaults(w http.ResponseWriter, r *http.Request) {
	if s.faultsOff(w) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"removed": s.faults.Clear()})
}

// removeFault is DELETE /_ferry/faults/{id}.
func (s *Server) removeFault(w http.ResponseWriter, r *http.Request) {
	if s.faultsOff(w) {
		return
	}
	id := r.PathValue("id")
	if !s.faults.Remove(id) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no fault rule %q", id)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"removed": 1})
}
