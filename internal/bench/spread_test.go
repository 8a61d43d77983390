package bench

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// TestClientsTakeTurns: each client is given the next node, round robin,
// and its requests resolve to that node; a context of no client resolves
// to the first node.
func TestClientsTakeTurns(t *testing.T) {
	cases := []struct {
		name      string
		endpoints []string
		want      []string // the nodes of clients 0, 1, ...
	}{
		{"one node", []string{"http://127.0.0.1:1"}, []string{"http://127.0.0.1:1", "http://127.0.0.1:1"}},
		{"three nodes", []string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3"},
			[]string{"http://127.0.0.1:1", "http://127.0.0.1:2", "http://127.0.0.1:3", "http://127.0.0.1:1", "http://127.0.0.1:2"}},
	}
	for _, tc := range cases {
		cfg := Config{Endpoints: tc.endpoints}
		if err := cfg.fill(); err != nil {
			t.Fatal(err)
		}
		if cfg.Endpoint != tc.endpoints[0] {
			t.Errorf("%s: Endpoint %q, want the first node", tc.name, cfg.Endpoint)
		}
		e := &env{cfg: cfg}
		resolve := func(ctx context.Context) string {
			if len(cfg.nodes) < 2 {
				return cfg.Endpoint // clients() keeps the SDK's own resolver
			}
			ep, err := spread[sqs.EndpointParameters](cfg.nodes).ResolveEndpoint(ctx, sqs.EndpointParameters{})
			if err != nil {
				t.Fatal(err)
			}
			return ep.URI.String()
		}
		for i, want := range tc.want {
			if got := resolve(e.client(context.Background())); got != want {
				t.Errorf("%s: client %d goes to %s, want %s", tc.name, i, got, want)
			}
		}
		if got := resolve(context.Background()); got != tc.endpoints[0] {
			t.Errorf("%s: a call of no client goes to %s, want the first node", tc.name, got)
		}
	}
}
