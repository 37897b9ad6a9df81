// Package hostsvc implements the HostService the host serves back to each
// plugin process over go-plugin's GRPCBroker: logging and span import, and
// the per-call services (LLM chat, tool calls, shared state) that act for
// one call's execution within the plugin's grants.
package hostsvc

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// MaxSpansPerExport bounds one ExportSpans batch; a bigger one is dropped.
const MaxSpansPerExport = 2048

// SpanSink receives the spans plugins export.
type SpanSink interface {
	ImportSpans(spans []sdktrace.ReadOnlySpan)
}

// Server is the HostService of one plugin process.
type Server struct {
	pluginv1.UnimplementedHostServiceServer

	manifest *manifest.Manifest
	grants   manifest.Grants
	calls    *Calls
	tools    Tools
	plugin   string
	log      hclog.Logger
	sink     SpanSink
	resource *resource.Resource
	// One limiter per kind of warning: a plugin that keeps sending
	// malformed batches must not hide that it also drops spans.
	warnDropped, warnOversized, warnMalformed *limiter
}

// Config is what a plugin's HostService acts with.
type Config struct {
	// Manifest is the plugin's; its grants bound the per-call services.
	Manifest *manifest.Manifest
	Logger   hclog.Logger
	// Sink receives the plugin's spans; nil drops them.
	Sink SpanSink
	// Calls and Tools enable the per-call services; nil offers none.
	Calls *Calls
	Tools Tools
}

// NewServer returns the HostService for one plugin process.
func NewServer(cfg Config) *Server {
	s := New(cfg.Manifest.Plugin.Name, cfg.Logger, cfg.Sink)
	s.manifest, s.grants, s.calls, s.tools = cfg.Manifest, cfg.Manifest.Plugin.Grants, cfg.Calls, cfg.Tools
	return s
}

// New returns a HostService for plugin offering logging and span import
// only; sink may be nil when the host exports no spans.
func New(plugin string, log hclog.Logger, sink SpanSink) *Server {
	return &Server{
		plugin:        plugin,
		log:           log.Named(plugin),
		sink:          sink,
		resource:      resource.NewSchemaless(attribute.String("service.name", "nexus-plugin-"+plugin)),
		warnDropped:   &limiter{every: time.Minute},
		warnOversized: &limiter{every: time.Minute},
		warnMalformed: &limiter{every: time.Minute},
	}
}

// Log writes a plugin's message to the host log.
func (s *Server) Log(_ context.Context, req *pluginv1.LogRequest) (*pluginv1.LogResponse, error) {
	level := map[pluginv1.LogLevel]hclog.Level{
		pluginv1.LogLevel_LOG_LEVEL_DEBUG: hclog.Debug,
		pluginv1.LogLevel_LOG_LEVEL_INFO:  hclog.Info,
		pluginv1.LogLevel_LOG_LEVEL_WARN:  hclog.Warn,
		pluginv1.LogLevel_LOG_LEVEL_ERROR: hclog.Error,
	}[req.GetLevel()]
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	s.log.Log(level, wire.Truncate(req.GetMessage()))
	return &pluginv1.LogResponse{}, nil
}

// ExportSpans imports a plugin's spans. A malformed or oversized batch is
// dropped with a (rate-limited) warning; it never fails the plugin's calls.
func (s *Server) ExportSpans(_ context.Context, req *pluginv1.ExportSpansRequest) (*pluginv1.ExportSpansResponse, error) {
	if n := req.GetDropped(); n > 0 {
		s.warnDropped.do(func(suppressed int) {
			s.log.Warn("plugin dropped spans: its export buffer was full", "dropped", n, "similar_warnings_suppressed", suppressed)
		})
	}
	spans := req.GetSpans()
	if len(spans) > MaxSpansPerExport {
		s.warnOversized.do(func(suppressed int) {
			s.log.Warn("dropped an oversized span batch from the plugin", "spans", len(spans), "limit", MaxSpansPerExport, "similar_warnings_suppressed", suppressed)
		})
		return nil, status.Errorf(codes.InvalidArgument, "%d spans in one batch, limit %d", len(spans), MaxSpansPerExport)
	}
	if s.sink == nil {
		return &pluginv1.ExportSpansResponse{}, nil
	}
	out := make([]sdktrace.ReadOnlySpan, 0, len(spans))
	for i, p := range spans {
		ro, err := wire.SpanFromProto(p, s.resource)
		if err != nil {
			s.warnMalformed.do(func(suppressed int) {
				s.log.Warn("dropped a malformed span batch from the plugin", "span", i, "error", err, "similar_warnings_suppressed", suppressed)
			})
			return nil, status.Errorf(codes.InvalidArgument, "span %d: %v", i, err)
		}
		out = append(out, ro)
	}
	s.sink.ImportSpans(out)
	return &pluginv1.ExportSpansResponse{}, nil
}

// limiter lets a warning through at most once per period and counts the
// ones it held back, so a misbehaving plugin cannot flood the log.
type limiter struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *limiter) do(f func(suppressed int)) {
	l.mu.Lock()
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < l.every {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	f(n)
}

var _ pluginv1.HostServiceServer = (*Server)(nil)
