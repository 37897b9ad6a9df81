// Package telemetry owns the host's tracing and metrics: the tracer
// provider and its exporters (an OTLP JSON lines file, OTLP over gRPC or
// HTTP from the standard OTEL_* variables), the import of spans plugins
// send back, and the tracing and metrics processors that wrap every call.
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Options configures tracing. The zero value traces nothing.
type Options struct {
	// TraceFile, when set, receives every span as OTLP JSON, one export
	// request per line.
	TraceFile string
	// FromEnv enables the OTLP exporter when OTEL_TRACES_EXPORTER is
	// "otlp", or when an OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set and
	// OTEL_TRACES_EXPORTER is not "none".
	FromEnv bool
	// SampleRatio is the fraction of root calls traced; 0 means 1.
	SampleRatio float64
	// Exporters are extra exporters (tests use an in-memory one).
	Exporters []sdktrace.SpanExporter
	// Syncer exports each span as it ends instead of in batches; for tests.
	Syncer bool
	Logger hclog.Logger
}

// Tracing is the host's tracer and the exporters behind it.
type Tracing struct {
	tracer     trace.Tracer
	tp         *sdktrace.TracerProvider
	processors []sdktrace.SpanProcessor
}

// Service is the resource name of the host's own spans.
const Service = "nexus-host"

// NewTracing builds the tracer provider from opts. With no exporter it
// returns a Tracing whose tracer records nothing and costs nothing.
func NewTracing(ctx context.Context, opts Options) (*Tracing, error) {
	log := opts.Logger
	if log == nil {
		log = hclog.NewNullLogger()
	}
	t := &Tracing{}
	exporters := append([]sdktrace.SpanExporter(nil), opts.Exporters...)
	if opts.TraceFile != "" {
		f, err := os.OpenFile(opts.TraceFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("--trace %s: %w", opts.TraceFile, err)
		}
		exporters = append(exporters, NewFileExporter(f))
	}
	if opts.FromEnv {
		exp, err := envExporter(ctx)
		if err != nil {
			return nil, err
		}
		if exp != nil {
			exporters = append(exporters, exp)
		}
	}
	if len(exporters) == 0 {
		t.tracer = noop.NewTracerProvider().Tracer("")
		return t, nil
	}
	// An unreachable collector must not flood the log with one warning
	// per span, nor fail any call.
	otel.SetErrorHandler(&onceHandler{log: log, every: time.Minute})

	ratio := opts.SampleRatio
	if ratio <= 0 || ratio > 1 {
		ratio = 1
	}
	popts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", Service))),
	}
	for _, e := range exporters {
		var p sdktrace.SpanProcessor
		if opts.Syncer {
			p = sdktrace.NewSimpleSpanProcessor(e)
		} else {
			p = sdktrace.NewBatchSpanProcessor(e)
		}
		t.processors = append(t.processors, p)
		popts = append(popts, sdktrace.WithSpanProcessor(p))
	}
	t.tp = sdktrace.NewTracerProvider(popts...)
	t.tracer = t.tp.Tracer("github.com/nexus-eval/nexus/host")
	return t, nil
}

// envExporter builds the OTLP exporter the OTEL_* variables ask for, or
// nil when they ask for none. The exporters read the endpoint, headers,
// TLS and timeout settings from the environment themselves.
func envExporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	which := strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") + os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
	switch {
	case which == "none":
		return nil, nil
	case which == "" && endpoint == "":
		return nil, nil
	case which != "" && which != "otlp":
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: nexus-host supports \"otlp\" and \"none\"", which)
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "grpc":
		return otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		return otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: use grpc or http/protobuf", protocol)
	}
}

// Enabled reports whether any exporter is configured.
func (t *Tracing) Enabled() bool { return t.tp != nil }

// Tracer returns the host's tracer.
func (t *Tracing) Tracer() trace.Tracer { return t.tracer }

// ImportSpans hands spans finished in a plugin to the host's exporters.
func (t *Tracing) ImportSpans(spans []sdktrace.ReadOnlySpan) {
	for _, s := range spans {
		for _, p := range t.processors {
			p.OnEnd(s)
		}
	}
}

// Shutdown flushes and closes every exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t.tp == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// onceHandler logs an exporter error once per period and counts the rest.
type onceHandler struct {
	log   hclog.Logger
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (h *onceHandler) Handle(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.last.IsZero() && time.Since(h.last) < h.every {
		h.suppressed++
		return
	}
	h.log.Warn("trace export failed; calls go on, spans are dropped", "error", err, "similar_errors_suppressed", h.suppressed)
	h.last, h.suppressed = time.Now(), 0
}
