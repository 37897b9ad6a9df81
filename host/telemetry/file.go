package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
)

// FileExporter writes spans as OTLP JSON lines: each line is one
// ExportTraceServiceRequest in the OTLP/JSON encoding, the format the
// OpenTelemetry Collector's file exporter writes and reads.
type FileExporter struct {
	mu sync.Mutex
	w  io.WriteCloser
	bw *bufio.Writer
}

// NewFileExporter writes to w and closes it on Shutdown.
func NewFileExporter(w io.WriteCloser) *FileExporter {
	return &FileExporter{w: w, bw: bufio.NewWriter(w)}
}

// ExportSpans writes one line for spans.
func (e *FileExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	b, err := marshalOTLPJSON(ToOTLP(spans))
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.bw.Write(append(b, '\n')); err != nil {
		return err
	}
	return e.bw.Flush()
}

// Shutdown flushes and closes the file.
func (e *FileExporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.bw.Flush(); err != nil {
		e.w.Close()
		return err
	}
	return e.w.Close()
}

// marshalOTLPJSON encodes req in the OTLP/JSON encoding. It is protobuf's
// JSON mapping with two exceptions the OTLP specification makes: trace and
// span ids are hex strings, not base64, and enums are integers. Readers
// that follow the specification (the Collector, Jaeger, Tempo) misread
// base64 ids.
func marshalOTLPJSON(req *collectorpb.ExportTraceServiceRequest) ([]byte, error) {
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, err
	}
	rewriteIDs(doc, func(s string) string {
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return s
		}
		return hex.EncodeToString(raw)
	})
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// idFields are the OTLP/JSON fields holding trace and span ids (in spans
// and their links).
var idFields = map[string]bool{"traceId": true, "spanId": true, "parentSpanId": true}

// rewriteIDs applies f to every id field in a decoded JSON document.
func rewriteIDs(doc any, f func(string) string) {
	switch v := doc.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && idFields[k] {
				v[k] = f(s)
				continue
			}
			rewriteIDs(x, f)
		}
	case []any:
		for _, x := range v {
			rewriteIDs(x, f)
		}
	}
}

var _ sdktrace.SpanExporter = (*FileExporter)(nil)
