package hostsvc

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"

	"google.golang.org/grpc/metadata"

	"github.com/nexus-eval/nexus/host/execution"
)

// CallMetadata is the gRPC metadata key that names the call a plugin acts
// for when it uses a per-call host service.
const CallMetadata = "nexus-call"

// Calls maps the tokens of calls in flight to their executions. A token
// exists only while its call runs, so a plugin cannot act for a call that
// ended or for another plugin's call it did not receive.
type Calls struct {
	m sync.Map // token -> *call
}

type call struct {
	exec   *execution.Execution
	plugin string
}

// Begin registers a call of plugin within exec and returns ctx with the
// token in its outgoing metadata, and the function that ends the call.
func (c *Calls) Begin(ctx context.Context, exec *execution.Execution, plugin string) (context.Context, func()) {
	var b [16]byte
	rand.Read(b[:])
	token := hex.EncodeToString(b[:])
	c.m.Store(token, &call{exec: exec, plugin: plugin})
	return metadata.AppendToOutgoingContext(ctx, CallMetadata, token), func() { c.m.Delete(token) }
}

// lookup finds the call named in ctx's incoming metadata; plugin must be
// the plugin the call was made to.
func (c *Calls) lookup(ctx context.Context, plugin string) (*call, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	tokens := md.Get(CallMetadata)
	if len(tokens) == 0 {
		return nil, fmt.Errorf("no %s metadata: host services act for a call; use them from inside a handler, with its context", CallMetadata)
	}
	v, ok := c.m.Load(tokens[0])
	if !ok {
		return nil, fmt.Errorf("the call this request acts for has ended or does not exist")
	}
	cl := v.(*call)
	if cl.plugin != plugin {
		return nil, fmt.Errorf("the call this request names was made to another plugin")
	}
	return cl, nil
}
