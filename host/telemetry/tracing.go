package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
)

// Span attribute keys.
const (
	AttrKind       = attribute.Key("nexus.component.kind")
	AttrName       = attribute.Key("nexus.component.name")
	AttrPlugin     = attribute.Key("nexus.plugin.name")
	AttrVersion    = attribute.Key("nexus.plugin.version")
	AttrSHA256     = attribute.Key("nexus.plugin.sha256")
	AttrProtocol   = attribute.Key("nexus.protocol.version")
	AttrOutcome    = attribute.Key("nexus.outcome")
	AttrErrorClass = attribute.Key("nexus.error.class")
	AttrErrorCode  = attribute.Key("nexus.error.code")
)

// Processors returns the tracing processors: a span per call, named after
// the operation, child of the caller's span, with the component's identity
// and the call's outcome.
func (t *Tracing) Processors() interface {
	Tools() registry.Processor[component.Tool]
	Agents() registry.Processor[component.Agent]
	Tasks() registry.Processor[component.Task]
} {
	return processors{name: "tracing", make: t.around}
}

func (t *Tracing) around(meta registry.Meta) around {
	static := []attribute.KeyValue{
		AttrKind.String(string(meta.Kind)),
		AttrName.String(meta.Name()),
		AttrPlugin.String(meta.Plugin),
		AttrVersion.String(meta.Version),
	}
	return func(ctx context.Context, op string) (context.Context, func(error)) {
		ctx, span := t.tracer.Start(ctx, op, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(static...))
		if !span.IsRecording() {
			return ctx, func(error) { span.End() }
		}
		return ctx, func(err error) {
			if meta.Origin != nil {
				// Unknown values are left out rather than recorded empty:
				// the binary may still be being hashed, and a call that
				// failed to launch has no process.
				o := meta.Origin()
				if o.SHA256 != "" {
					span.SetAttributes(AttrSHA256.String(o.SHA256))
				}
				if o.Protocol != 0 {
					span.SetAttributes(AttrProtocol.Int(o.Protocol))
				}
			}
			if err == nil {
				span.SetAttributes(AttrOutcome.String("ok"))
			} else {
				span.SetAttributes(AttrOutcome.String("error"), AttrErrorClass.String(ErrorClass(err)))
				if ce, ok := asComponentError(err); ok {
					span.SetAttributes(AttrErrorCode.String(ce.Code))
				}
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
			}
			span.End()
		}
	}
}
