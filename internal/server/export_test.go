package server

import "net/http"

// ClassOf is the class ("api", "public", "admin") of a registered
// pattern; ok is false when no endpoint classifies it.
func ClassOf(pattern string) (class string, ok bool) {
	e, ok := classify(pattern)
	return e.access.String(), ok
}

// Endpoints lists the classified endpoints: pattern, class and what each
// exposes.
func Endpoints() [][3]string {
	var out [][3]string
	for _, e := range endpoints() {
		out = append(out, [3]string{e.pattern, e.access.String(), e.exposes})
	}
	return out
}

// Handler is what the API listener serves every request with, for
// benchmarks that measure the server's own cost without a network.
func (s *Server) Handler() http.Handler { return s.http.Handler }
