package wire

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
)

// traceContext is the W3C propagator used across the plugin boundary,
// whatever the host's global propagator is.
var traceContext = propagation.TraceContext{}

// InjectTrace adds the W3C trace context of ctx's span to the outgoing
// gRPC metadata when the span is sampled. An unsampled call sends nothing:
// a plugin records only what the host samples, so it would make the same
// decision without the header, and the call stays as cheap as untraced.
func InjectTrace(ctx context.Context) context.Context {
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx
	}
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
