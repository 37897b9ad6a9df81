package hostsvc

import (
	"context"
	"github.com/nexus-eval/nexus/internal/testkit"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLimiter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// gaps[i] is the pause before the i-th do (the first included).
		gaps []time.Duration
		// want is the suppressed count of each warning that got through.
		want []int
	}{
		{name: "first always passes", gaps: []time.Duration{0}, want: []int{0}},
		{name: "burst gives one warning", gaps: []time.Duration{0, 0, 0, 0, 0}, want: []int{0}},
		{name: "after the period the count of held back warnings comes through", gaps: []time.Duration{0, 0, 0, 400 * time.Millisecond, 0}, want: []int{0, 2}},
		{name: "spaced warnings all pass", gaps: []time.Duration{0, 400 * time.Millisecond, 400 * time.Millisecond}, want: []int{0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			l := &limiter{every: 300 * time.Millisecond}
			var got []int
			for _, g := range tt.gaps {
				time.Sleep(g)
				l.do(func(suppressed int) { got = append(got, suppressed) })
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("warnings let through, by suppressed count (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLimiterConcurrent(t *testing.T) {
	t.Parallel()
	l := &limiter{every: time.Hour}
	var mu sync.Mutex
	passed := 0
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			l.do(func(int) {
				mu.Lock()
				passed++
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	if passed != 1 {
		t.Errorf("%d of 64 concurrent warnings passed, want 1", passed)
	}
	if l.suppressed != 63 {
		t.Errorf("suppressed = %d, want 63", l.suppressed)
	}
}

// recorder is a SpanSink that keeps what it receives.
type recorder struct {
	mu    sync.Mutex
	spans []sdktrace.ReadOnlySpan
	calls int
}

func (r *recorder) ImportSpans(spans []sdktrace.ReadOnlySpan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls++
	r.spans = append(r.spans, spans...)
}

func newServer(sink SpanSink) (*Server, *testkit.SyncBuffer) {
	buf := &testkit.SyncBuffer{}
	log := hclog.New(&hclog.LoggerOptions{Output: buf, Level: hclog.Debug})
	return New("hostile", log, sink), buf
}

func goodSpan(i byte) *pluginv1.Span {
	return &pluginv1.Span{
		TraceId:       []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanId:        []byte{1, 1, 1, 1, 1, 1, 1, i},
		ParentSpanId:  []byte{2, 2, 2, 2, 2, 2, 2, 2},
		Name:          "plugin.tool.call",
		StartUnixNano: 1_000_000_000,
		EndUnixNano:   1_002_000_000,
		TraceFlags:    1,
		Attributes:    []*pluginv1.Attribute{{Key: "k", Value: &pluginv1.Attribute_StringValue{StringValue: "v"}}},
	}
}

func TestExportSpansRejectsBadBatches(t *testing.T) {
	t.Parallel()
	bad := func(mut func(*pluginv1.Span)) *pluginv1.Span {
		s := goodSpan(9)
		mut(s)
		return s
	}
	tests := []struct {
		name     string
		spans    []*pluginv1.Span
		wantCode codes.Code
		wantLog  string
	}{
		{
			name:     "short trace id",
			spans:    []*pluginv1.Span{goodSpan(1), bad(func(s *pluginv1.Span) { s.TraceId = s.TraceId[:15] })},
			wantCode: codes.InvalidArgument,
			wantLog:  "dropped a malformed span batch",
		},
		{
			name:     "long span id",
			spans:    []*pluginv1.Span{bad(func(s *pluginv1.Span) { s.SpanId = append(s.SpanId, 0) })},
			wantCode: codes.InvalidArgument,
			wantLog:  "dropped a malformed span batch",
		},
		{
			name:     "zero trace id",
			spans:    []*pluginv1.Span{bad(func(s *pluginv1.Span) { s.TraceId = make([]byte, 16) })},
			wantCode: codes.InvalidArgument,
			wantLog:  "zero trace or span id",
		},
		{
			name:     "no name",
			spans:    []*pluginv1.Span{goodSpan(1), goodSpan(2), bad(func(s *pluginv1.Span) { s.Name = "" })},
			wantCode: codes.InvalidArgument,
			wantLog:  "no name",
		},
		{
			name:     "oversized",
			spans:    make([]*pluginv1.Span, MaxSpansPerExport+1), // never parsed: the size alone refuses it
			wantCode: codes.InvalidArgument,
			wantLog:  "dropped an oversized span batch",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sink := &recorder{}
			s, log := newServer(sink)
			_, err := s.ExportSpans(context.Background(), &pluginv1.ExportSpansRequest{Spans: tt.spans})
			if got := status.Code(err); got != tt.wantCode {
				t.Errorf("code = %v (%v), want %v", got, err, tt.wantCode)
			}
			if sink.calls != 0 || len(sink.spans) != 0 {
				t.Errorf("sink got %d spans in %d imports, want none: the whole batch must be dropped", len(sink.spans), sink.calls)
			}
			if got := log.String(); !strings.Contains(got, tt.wantLog) || !strings.Contains(got, "hostile") {
				t.Errorf("log does not name the plugin and say %q:\n%s", tt.wantLog, got)
			}
		})
	}
}

func TestExportSpansImportsGoodBatch(t *testing.T) {
	t.Parallel()
	sink := &recorder{}
	s, log := newServer(sink)
	spans := []*pluginv1.Span{goodSpan(1), goodSpan(2)}
	if _, err := s.ExportSpans(context.Background(), &pluginv1.ExportSpansRequest{Spans: spans}); err != nil {
		t.Fatal(err)
	}
	type got struct {
		Name, SpanID, Parent, Service string
		Duration                      time.Duration
	}
	var gots []got
	for _, sp := range sink.spans {
		svc, _ := sp.Resource().Set().Value("service.name")
		gots = append(gots, got{sp.Name(), sp.SpanContext().SpanID().String(), sp.Parent().SpanID().String(), svc.AsString(), sp.EndTime().Sub(sp.StartTime())})
	}
	want := []got{
		{"plugin.tool.call", "0101010101010101", "0202020202020202", "nexus-plugin-hostile", 2 * time.Millisecond},
		{"plugin.tool.call", "0101010101010102", "0202020202020202", "nexus-plugin-hostile", 2 * time.Millisecond},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("imported spans (-want +got):\n%s", diff)
	}
	if l := log.String(); l != "" {
		t.Errorf("a good batch logged:\n%s", l)
	}
}

func TestExportSpansWithoutSink(t *testing.T) {
	t.Parallel()
	s, _ := newServer(nil)
	if _, err := s.ExportSpans(context.Background(), &pluginv1.ExportSpansRequest{Spans: []*pluginv1.Span{goodSpan(1)}}); err != nil {
		t.Errorf("good batch with no sink: %v", err)
	}
	_, err := s.ExportSpans(context.Background(), &pluginv1.ExportSpansRequest{Spans: make([]*pluginv1.Span, MaxSpansPerExport+1)})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("oversized batch with no sink: err = %v, want InvalidArgument", err)
	}
}

func TestExportSpansWarningsAreRateLimitedPerKind(t *testing.T) {
	t.Parallel()
	sink := &recorder{}
	s, log := newServer(sink)
	ctx := context.Background()
	malformed := &pluginv1.ExportSpansRequest{Spans: []*pluginv1.Span{{TraceId: []byte{1}, SpanId: []byte{2}, Name: "x"}}}
	oversized := &pluginv1.ExportSpansRequest{Spans: make([]*pluginv1.Span, MaxSpansPerExport+1)}
	dropped := &pluginv1.ExportSpansRequest{Dropped: 5, Spans: []*pluginv1.Span{goodSpan(1)}}
	for range 10 {
		s.ExportSpans(ctx, malformed)
		s.ExportSpans(ctx, oversized)
		if _, err := s.ExportSpans(ctx, dropped); err != nil {
			t.Fatalf("a batch reporting dropped spans is still imported: %v", err)
		}
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	count := map[string]int{}
	for _, l := range lines {
		for _, k := range []string{"malformed span batch", "oversized span batch", "plugin dropped spans"} {
			if strings.Contains(l, k) {
				count[k]++
			}
		}
	}
	want := map[string]int{"malformed span batch": 1, "oversized span batch": 1, "plugin dropped spans": 1}
	if diff := cmp.Diff(want, count); diff != "" {
		t.Errorf("warning lines per kind after 10 bad batches of each (-want +got):\n%s\nlog:\n%s", diff, log)
	}
	if len(lines) != 3 {
		t.Errorf("%d log lines, want 3:\n%s", len(lines), log)
	}
	if !strings.Contains(log.String(), "dropped=5") {
		t.Errorf("dropped warning does not carry the count:\n%s", log)
	}
	if len(sink.spans) != 10 {
		t.Errorf("sink got %d spans, want the 10 good ones of the dropped-count batches", len(sink.spans))
	}
}

func TestLog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		level pluginv1.LogLevel
		msg   string
		want  string
	}{
		{"warn", pluginv1.LogLevel_LOG_LEVEL_WARN, "careful", "[WARN]  hostile: careful"},
		{"error", pluginv1.LogLevel_LOG_LEVEL_ERROR, "broken", "[ERROR] hostile: broken"},
		{"unknown level is info", pluginv1.LogLevel(99), "hello", "[INFO]  hostile: hello"},
		{"long message is cut", pluginv1.LogLevel_LOG_LEVEL_INFO, strings.Repeat("x", 10000), "[INFO]  hostile: " + strings.Repeat("x", 4096) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, log := newServer(nil)
			if _, err := s.Log(context.Background(), &pluginv1.LogRequest{Level: tt.level, Message: tt.msg}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(log.String(), tt.want) {
				t.Errorf("log = %q, want it to contain %q", log, tt.want)
			}
		})
	}
}
