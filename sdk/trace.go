package sdk

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
)

// Span export limits: the queue bounds memory, the batch bounds one
// ExportSpans message. A full queue drops spans (counted and reported to
// the host) rather than slow a call down.
const (
	spanQueueSize = 4096
	spanBatchSize = 256
	spanLinger    = 200 * time.Millisecond
	exportTimeout = 5 * time.Second
)

// telemetry is the plugin side of tracing: it continues the host's trace
// inside the plugin and ships finished spans back over the HostService.
type telemetry struct {
	tracer trace.Tracer
	queue  *spanQueue
	tp     *sdktrace.TracerProvider
}

func newTelemetry(h *hostConn) *telemetry {
	q := &spanQueue{host: h, items: make(chan queued, spanQueueSize)}
	tp := sdktrace.NewTracerProvider(
		// Record exactly what the host samples.
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithSpanProcessor(q),
	)
	// Handlers that use otel directly join the same trace.
	otel.SetTracerProvider(tp)
	return &telemetry{tracer: tp.Tracer("github.com/nexus-eval/nexus/sdk"), queue: q, tp: tp}
}

// start continues the host's trace for one call. When the host does not
// sample the call it returns ctx and a no-op end, so unsampled calls pay
// only for reading the metadata.
func (t *telemetry) start(ctx context.Context, name string, hostID uint32, attrs ...attribute.KeyValue) (context.Context, func(error)) {
	ctx = wire.ExtractTrace(ctx)
	if !trace.SpanContextFromContext(ctx).IsSampled() {
		return ctx, func(error) {}
	}
	t.queue.host.use(hostID)
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, func(err error) {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		span.End()
	}
}

// hostConn dials the host's HostService through the broker on first use.
type hostConn struct {
	mu     sync.Mutex
	broker *plugin.GRPCBroker
	id     uint32
	conn   *grpc.ClientConn
	client pluginv1.HostServiceClient
}

func (h *hostConn) setBroker(b *plugin.GRPCBroker) {
	h.mu.Lock()
	h.broker = b
	h.mu.Unlock()
}

// use records the broker id the host serves its HostService on.
func (h *hostConn) use(id uint32) {
	if id == 0 {
		return
	}
	h.mu.Lock()
	if h.id == 0 {
		h.id = id
	}
	h.mu.Unlock()
}

// get returns the HostService client, dialing it if needed; nil when the
// host offers none.
func (h *hostConn) get() pluginv1.HostServiceClient {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.client != nil || h.id == 0 || h.broker == nil {
		return h.client
	}
	conn, err := h.broker.Dial(h.id)
	if err != nil {
		Logger().Warn("cannot reach the host service", "error", err)
		h.id = 0
		return nil
	}
	h.conn, h.client = conn, pluginv1.NewHostServiceClient(conn)
	return h.client
}

// queued is a finished span or, when flushed is set, a flush marker.
type queued struct {
	span    sdktrace.ReadOnlySpan
	flushed chan struct{}
}

// spanQueue is a span processor that never blocks the span's owner: it
// hands spans to one goroutine that batches them to the host.
type spanQueue struct {
	host    *hostConn
	items   chan queued
	dropped atomic.Uint64
	once    sync.Once
}

func (q *spanQueue) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (q *spanQueue) OnEnd(s sdktrace.ReadOnlySpan) {
	q.once.Do(func() { go q.run() })
	select {
	case q.items <- queued{span: s}:
	default:
		q.dropped.Add(1)
	}
}

// ForceFlush returns once every span queued before it reached the host.
func (q *spanQueue) ForceFlush(ctx context.Context) error {
	q.once.Do(func() { go q.run() })
	done := make(chan struct{})
	select {
	case q.items <- queued{flushed: done}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (q *spanQueue) Shutdown(ctx context.Context) error { return q.ForceFlush(ctx) }

// run batches spans to the host: a batch goes when it is full, when it
// has waited spanLinger, or at a flush. Sending a span as soon as it ends
// would cost one extra round trip per call.
func (q *spanQueue) run() {
	batch := make([]*pluginv1.Span, 0, spanBatchSize)
	var markers []chan struct{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	send := func() {
		timer.Stop()
		q.send(batch)
		batch = batch[:0]
		for _, m := range markers {
			close(m)
		}
		markers = markers[:0]
	}
	for {
		select {
		case it := <-q.items:
			if it.flushed != nil {
				markers = append(markers, it.flushed)
				send()
				continue
			}
			if len(batch) == 0 {
				timer.Reset(spanLinger)
			}
			batch = append(batch, wire.SpanToProto(it.span))
			if len(batch) == spanBatchSize {
				send()
			}
		case <-timer.C:
			send()
		}
	}
}

func (q *spanQueue) send(batch []*pluginv1.Span) {
	dropped := q.dropped.Swap(0)
	if len(batch) == 0 && dropped == 0 {
		return
	}
	client := q.host.get()
	if client == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	if _, err := client.ExportSpans(ctx, &pluginv1.ExportSpansRequest{Spans: batch, Dropped: dropped}); err != nil {
		q.dropped.Add(uint64(len(batch)) + dropped)
		Logger().Debug("span export failed", "error", err, "spans", len(batch))
	}
}

// Log returns a logger for use inside a call: it carries the call's trace
// and span ids, so the host log and the trace can be joined.
func Log(ctx context.Context) hclog.Logger {
	l := Logger()
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		l = l.With("trace_id", sc.TraceID().String(), "span_id", sc.SpanID().String())
	}
	return l
}

var _ sdktrace.SpanProcessor = (*spanQueue)(nil)
