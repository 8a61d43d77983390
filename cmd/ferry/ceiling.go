package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ferrymq/ferry/internal/bench/ceiling"
)

// ceilingCmd serves the ceiling, a measuring fixture for ferry bench: it
// answers the benchmarks' calls with valid AWS answers and holds nothing,
// so that a broker's figures read as a fraction of what the same client
// gets on this machine when the broker does no work at all.
func ceilingCmd(ctx context.Context, args []string, _ func(string) string, _, stderr io.Writer) int {
	fs := newFlagSet("ferry ceiling", "Usage: ferry ceiling --listen HOST:PORT\n\n"+
		"Serves a measuring fixture, not a broker: every call ferry bench makes of the scenarios that need no\n"+
		"stored message is answered at once with a valid AWS answer, and nothing is kept. ferry bench knows it\n"+
		"by its answers, reports its figures as \"ceiling\", unverified, and skips the other scenarios.\n", stderr)
	listen := fs.String("listen", "", "address to listen on, e.g. 127.0.0.1:4566 (required)")
	httpServer := fs.String("http-server", "net", "the HTTP server: net (Go's net/http) or fast (Ferry's lean HTTP/1.1 loop)")
	if code, ok := parseFlags(fs, args); !ok {
		return code
	}
	if *listen == "" {
		fmt.Fprintln(stderr, "ferry ceiling: --listen is required")
		return 2
	}
	if *httpServer != "net" && *httpServer != "fast" {
		fmt.Fprintln(stderr, "ferry ceiling: --http-server must be net or fast")
		return 2
	}
	srv, err := ceiling.StartOn(*listen, *httpServer == "fast")
	if err != nil {
		fmt.Fprintf(stderr, "ferry %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "ferry ceiling: serving on %s; it holds nothing and answers only what ferry bench asks\n", srv.URL())
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "ferry %v\n", err)
		return 1
	}
	return 0
}
