package telemetry

import (
	"bufio"
	"context"
	"io"
	"sync"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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
	b, err := protojson.Marshal(ToOTLP(spans))
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

var _ sdktrace.SpanExporter = (*FileExporter)(nil)
