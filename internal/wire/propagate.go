package wire

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/grpc/metadata"
)

// traceContext is the W3C propagator used across the plugin boundary,
// whatever the host's global propagator is.
var traceContext = propagation.TraceContext{}

// InjectTrace adds the W3C trace context of ctx's span to the outgoing
// gRPC metadata. It costs nothing when ctx carries no span.
func InjectTrace(ctx context.Context) context.Context {
	md := metadata.MD{}
	traceContext.Inject(ctx, mdCarrier(md))
	if len(md) == 0 {
		return ctx
	}
	return metadata.NewOutgoingContext(ctx, md)
}

// ExtractTrace returns ctx with the remote span context found in the
// incoming gRPC metadata, if any.
func ExtractTrace(ctx context.Context) context.Context {
	md, ok := metadata.FromIncomingContext(ctx)
	if !ok {
		return ctx
	}
	return traceContext.Extract(ctx, mdCarrier(md))
}

// mdCarrier adapts gRPC metadata to a propagation.TextMapCarrier.
type mdCarrier metadata.MD

func (c mdCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c mdCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c mdCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}
