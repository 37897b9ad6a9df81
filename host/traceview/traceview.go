// Package traceview reads a trace file written by `nexus-host --trace`
// (OTLP JSON lines) and prints its traces as indented trees, so a user can
// read a trace without a tracing backend.
package traceview

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// Span is one span of a trace file.
type Span struct {
	TraceID, SpanID, ParentID string
	Name                      string
	Service                   string
	Start, End                time.Time
	Attributes                map[string]string
	Error                     string // status message when the status is error
	IsError                   bool
}

// Duration is the span's length.
func (s Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// maxLine bounds one line of a trace file.
const maxLine = 64 << 20

// Read parses OTLP JSON lines. A bad line is an error naming its number.
func Read(r io.Reader) ([]Span, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	var spans []Span
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var req collectorpb.ExportTraceServiceRequest
		if err := unmarshal([]byte(line), &req); err != nil {
			return nil, fmt.Errorf("line %d: not an OTLP JSON export request: %v", n, err)
		}
		for _, rs := range req.GetResourceSpans() {
			service := attr(rs.GetResource().GetAttributes(), "service.name")
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans = append(spans, convert(s, service))
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return spans, nil
}

// unmarshal decodes one OTLP/JSON export request. The OTLP encoding
// writes trace and span ids as hex where protobuf's JSON mapping expects
// base64; both are accepted (their lengths differ), so files written by
// the Collector and older nexus-host files both read. Fields this version
// does not know are ignored.
func unmarshal(line []byte, req *collectorpb.ExportTraceServiceRequest) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value on the line")
	}
	rewriteIDs(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(b, req)
}

// hexLen is the hex length of each id field.
var hexLen = map[string]int{"traceId": 32, "spanId": 16, "parentSpanId": 16}

// rewriteIDs turns hex id fields into the base64 protojson reads.
func rewriteIDs(doc any) {
	switch v := doc.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && hexLen[k] > 0 {
				if raw, err := hex.DecodeString(s); err == nil && len(s) == hexLen[k] {
					v[k] = base64.StdEncoding.EncodeToString(raw)
				}
				continue
			}
			rewriteIDs(x)
		}
	case []any:
		for _, x := range v {
			rewriteIDs(x)
		}
	}
}

func convert(s *tracepb.Span, service string) Span {
	out := Span{
		TraceID:    hex.EncodeToString(s.GetTraceId()),
		SpanID:     hex.EncodeToString(s.GetSpanId()),
		ParentID:   hex.EncodeToString(s.GetParentSpanId()),
		Name:       s.GetName(),
		Service:    service,
		Start:      time.Unix(0, int64(s.GetStartTimeUnixNano())),
		End:        time.Unix(0, int64(s.GetEndTimeUnixNano())),
		Attributes: map[string]string{},
		IsError:    s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
		Error:      s.GetStatus().GetMessage(),
	}
	for _, kv := range s.GetAttributes() {
		out.Attributes[kv.GetKey()] = value(kv.GetValue())
	}
	return out
}

func attr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() == key {
			return value(kv.GetValue())
		}
	}
	return ""
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	}
	return ""
}

// shown are the attributes printed beside a span, in this order.
var shown = []string{"nexus.plugin.name", "nexus.component.name", "nexus.error.class", "nexus.error.code"}

// Render prints every trace as a tree: traces by start time, children by
// start time, each span with its duration, service and key attributes,
// and errors on their own line. A span whose parent is not in the file is
// shown as a root.
func Render(w io.Writer, spans []Span) error {
	byTrace := map[string][]Span{}
	var order []string
	for _, s := range spans {
		if _, ok := byTrace[s.TraceID]; !ok {
			order = append(order, s.TraceID)
		}
		byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
	}
	first := func(id string) time.Time {
		return slices.MinFunc(byTrace[id], func(a, b Span) int { return a.Start.Compare(b.Start) }).Start
	}
	slices.SortStableFunc(order, func(a, b string) int { return first(a).Compare(first(b)) })

	bw := &errWriter{w: w}
	for i, id := range order {
		if i > 0 {
			bw.printf("\n")
		}
		ts := byTrace[id]
		start := first(id)
		end := slices.MaxFunc(ts, func(a, b Span) int { return a.End.Compare(b.End) }).End
		bw.printf("trace %s  %d spans  %s\n", id, len(ts), fmtDur(end.Sub(start)))
		ids := map[string]bool{}
		children := map[string][]Span{}
		for _, s := range ts {
			ids[s.SpanID] = true
		}
		var roots []Span
		for _, s := range ts {
			if s.ParentID == "" || !ids[s.ParentID] {
				roots = append(roots, s)
			} else {
				children[s.ParentID] = append(children[s.ParentID], s)
			}
		}
		var walk func(s Span, depth int)
		walk = func(s Span, depth int) {
			indent := strings.Repeat("  ", depth+1)
			bw.printf("%s%s  %s  [%s]%s\n", indent, s.Name, fmtDur(s.Duration()), s.Service, attrs(s))
			if s.IsError {
				bw.printf("%s  ERROR: %s\n", indent, s.Error)
			}
			kids := children[s.SpanID]
			slices.SortStableFunc(kids, func(a, b Span) int { return a.Start.Compare(b.Start) })
			for _, k := range kids {
				walk(k, depth+1)
			}
		}
		slices.SortStableFunc(roots, func(a, b Span) int { return a.Start.Compare(b.Start) })
		for _, r := range roots {
			walk(r, 0)
		}
	}
	return bw.err
}

func attrs(s Span) string {
	var b strings.Builder
	for _, k := range shown {
		if v, ok := s.Attributes[k]; ok && v != "" {
			fmt.Fprintf(&b, " %s=%s", strings.TrimPrefix(k, "nexus."), v)
		}
	}
	return b.String()
}

// fmtDur prints durations at a precision a human reads: µs below 1 ms.
func fmtDur(d time.Duration) string {
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.3fs", d.Seconds())
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
