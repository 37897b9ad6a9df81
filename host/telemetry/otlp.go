package telemetry

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// ToOTLP converts spans to an OTLP export request, grouped by resource and
// instrumentation scope as OTLP requires.
func ToOTLP(spans []sdktrace.ReadOnlySpan) *collectorpb.ExportTraceServiceRequest {
	type scopeKey struct {
		res   *resource.Resource
		scope instrumentation.Scope
	}
	byRes := map[*resource.Resource]*tracepb.ResourceSpans{}
	byScope := map[scopeKey]*tracepb.ScopeSpans{}
	req := &collectorpb.ExportTraceServiceRequest{}
	for _, s := range spans {
		res := s.Resource()
		rs, ok := byRes[res]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: kvs(res.Attributes())}}
			byRes[res] = rs
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		k := scopeKey{res, s.InstrumentationScope()}
		ss, ok := byScope[k]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: k.scope.Name, Version: k.scope.Version}}
			byScope[k] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, span(s))
	}
	return req
}

func span(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p := &tracepb.Span{
		TraceId:           tid[:],
		SpanId:            sid[:],
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              tracepb.Span_SpanKind(s.SpanKind()),
		StartTimeUnixNano: uint64(s.StartTime().UnixNano()),
		EndTimeUnixNano:   uint64(s.EndTime().UnixNano()),
		Attributes:        kvs(s.Attributes()),
		Flags:             uint32(sc.TraceFlags()),
		Status:            &tracepb.Status{Message: s.Status().Description, Code: statusCode(s.Status().Code)},
	}
	if parent := s.Parent(); parent.IsValid() {
		psid := parent.SpanID()
		p.ParentSpanId = psid[:]
	}
	for _, e := range s.Events() {
		p.Events = append(p.Events, &tracepb.Span_Event{TimeUnixNano: uint64(e.Time.UnixNano()), Name: e.Name, Attributes: kvs(e.Attributes)})
	}
	return p
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

func kvs(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, &commonpb.KeyValue{Key: string(a.Key), Value: anyValue(a.Value)})
	}
	return out
}

func anyValue(v attribute.Value) *commonpb.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.String()}}
}
