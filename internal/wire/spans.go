package wire

import (
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

// Limits on one imported span: a plugin cannot make the host hold
// unbounded data through its spans.
const (
	MaxSpanAttributes = 128
	MaxSpanEvents     = 128
	MaxSpanString     = 4096
)

// SpanToProto converts a finished span for ExportSpans.
func SpanToProto(s sdktrace.ReadOnlySpan) *pluginv1.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &pluginv1.Span{
		TraceId:       tid[:],
		SpanId:        sid[:],
		Name:          s.Name(),
		Kind:          pluginv1.SpanKind(s.SpanKind()),
		StartUnixNano: s.StartTime().UnixNano(),
		EndUnixNano:   s.EndTime().UnixNano(),
		Attributes:    attrsToProto(s.Attributes()),
		Status:        &pluginv1.SpanStatus{Code: uint32(s.Status().Code), Message: s.Status().Description},
		TraceFlags:    uint32(sc.TraceFlags()),
		TraceState:    sc.TraceState().String(),
		ScopeName:     s.InstrumentationScope().Name,
		ScopeVersion:  s.InstrumentationScope().Version,
	}
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &pluginv1.SpanEvent{Name: e.Name, TimeUnixNano: e.Time.UnixNano(), Attributes: attrsToProto(e.Attributes)})
	}
	return p
}

func attrsToProto(kvs []attribute.KeyValue) []*pluginv1.Attribute {
	out := make([]*pluginv1.Attribute, 0, len(kvs))
	for _, kv := range kvs {
		a := &pluginv1.Attribute{Key: string(kv.Key)}
		switch kv.Value.Type() {
		case attribute.BOOL:
			a.Value = &pluginv1.Attribute_BoolValue{BoolValue: kv.Value.AsBool()}
		case attribute.INT64:
			a.Value = &pluginv1.Attribute_IntValue{IntValue: kv.Value.AsInt64()}
		case attribute.FLOAT64:
			a.Value = &pluginv1.Attribute_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
		default:
			a.Value = &pluginv1.Attribute_StringValue{StringValue: kv.Value.String()}
		}
		out = append(out, a)
	}
	return out
}

// ErrBadSpan: an imported span is malformed.
var ErrBadSpan = errors.New("malformed span")

// SpanFromProto checks and converts a span a plugin exported, attributing
// it to res. Every string is cut to MaxSpanString and attributes and
// events to their limits; ids of the wrong size are an error.
func SpanFromProto(p *pluginv1.Span, res *resource.Resource) (sdktrace.ReadOnlySpan, error) {
	var tid trace.TraceID
	var sid, psid trace.SpanID
	if len(p.GetTraceId()) != len(tid) || len(p.GetSpanId()) != len(sid) {
		return nil, fmt.Errorf("%w: trace id has %d bytes, span id %d; want 16 and 8", ErrBadSpan, len(p.GetTraceId()), len(p.GetSpanId()))
	}
	copy(tid[:], p.GetTraceId())
	copy(sid[:], p.GetSpanId())
	if !tid.IsValid() || !sid.IsValid() {
		return nil, fmt.Errorf("%w: zero trace or span id", ErrBadSpan)
	}
	if p.GetName() == "" {
		return nil, fmt.Errorf("%w: no name", ErrBadSpan)
	}
	ts, err := trace.ParseTraceState(p.GetTraceState())
	if err != nil {
		ts = trace.TraceState{}
	}
	stub := tracetest.SpanStub{
		Name: cut(p.GetName()),
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(p.GetTraceFlags()), TraceState: ts, Remote: false,
		}),
		SpanKind:  trace.SpanKind(p.GetKind()),
		StartTime: time.Unix(0, p.GetStartUnixNano()),
		EndTime:   time.Unix(0, p.GetEndUnixNano()),
		Status: sdktrace.Status{
			Code:        codes.Code(min(p.GetStatus().GetCode(), uint32(codes.Ok))),
			Description: cut(p.GetStatus().GetMessage()),
		},
		InstrumentationScope: instrumentationScope(p),
		Resource:             res,
	}
	if len(p.GetParentSpanId()) == len(psid) {
		copy(psid[:], p.GetParentSpanId())
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: trace.TraceFlags(p.GetTraceFlags()), Remote: true})
	}
	stub.Attributes, stub.DroppedAttributes = attrsFromProto(p.GetAttributes())
	for i, e := range p.GetEvents() {
		if i == MaxSpanEvents {
			stub.DroppedEvents = len(p.GetEvents()) - i
			break
		}
		attrs, dropped := attrsFromProto(e.GetAttributes())
		stub.Events = append(stub.Events, sdktrace.Event{Name: cut(e.GetName()), Time: time.Unix(0, e.GetTimeUnixNano()), Attributes: attrs, DroppedAttributeCount: dropped})
	}
	return stub.Snapshot(), nil
}

func attrsFromProto(as []*pluginv1.Attribute) ([]attribute.KeyValue, int) {
	n := min(len(as), MaxSpanAttributes)
	out := make([]attribute.KeyValue, 0, n)
	for _, a := range as[:n] {
		k := attribute.Key(cut(a.GetKey()))
		switch v := a.GetValue().(type) {
		case *pluginv1.Attribute_BoolValue:
			out = append(out, k.Bool(v.BoolValue))
		case *pluginv1.Attribute_IntValue:
			out = append(out, k.Int64(v.IntValue))
		case *pluginv1.Attribute_DoubleValue:
			out = append(out, k.Float64(v.DoubleValue))
		default:
			out = append(out, k.String(cut(a.GetStringValue())))
		}
	}
	return out, len(as) - n
}

// Truncate cuts s to MaxSpanString bytes.
func Truncate(s string) string { return cut(s) }

func cut(s string) string {
	if len(s) <= MaxSpanString {
		return s
	}
	return s[:MaxSpanString]
}

func instrumentationScope(p *pluginv1.Span) instrumentation.Scope {
	return instrumentation.Scope{Name: cut(p.GetScopeName()), Version: cut(p.GetScopeVersion())}
}
