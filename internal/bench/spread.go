package bench

import (
	"context"
	"net/url"

	smithyendpoints "github.com/aws/smithy-go/endpoints"
)

// Several nodes of one broker are driven as a load balancer spreads its
// clients: each client of a scenario (a worker that sends or receives) is
// given the next node in turn and keeps it, so that the nodes share the
// clients evenly and a message sent through one node is often received and
// deleted through another.

// nodeKey marks a client's context with the index of its node.
type nodeKey struct{}

// client returns ctx for one more client, whose requests go to the next
// node in turn; with one node, ctx itself.
func (e *env) client(ctx context.Context) context.Context {
	if len(e.cfg.nodes) < 2 {
		return ctx
	}
	return context.WithValue(ctx, nodeKey{}, int(e.turn.Add(1)-1)%len(e.cfg.nodes))
}

// spread is the SDK's endpoint resolver over several nodes: a request goes
// to the node of the client whose context it carries, and to the first
// node when it carries none. P is the service's endpoint parameters.
type spread[P any] []url.URL

// ResolveEndpoint picks the node of ctx's client.
func (s spread[P]) ResolveEndpoint(ctx context.Context, _ P) (smithyendpoints.Endpoint, error) {
	i, _ := ctx.Value(nodeKey{}).(int)
	return smithyendpoints.Endpoint{URI: s[i%len(s)]}, nil
}
