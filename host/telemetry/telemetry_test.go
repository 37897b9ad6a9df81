package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-eval/nexus/internal/testkit"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/host/validate"
	"github.com/nexus-eval/nexus/manifest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestErrorClass(t *testing.T) {
	t.Parallel()
	ce := &component.Error{Plugin: "p", Kind: "tool", Component: "c", Code: "nope", Message: "m"}
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, ""},
		{"invalid input", fmt.Errorf("wrapped: %w", validate.ErrInvalidInput), "invalid_input"},
		{"invalid output", fmt.Errorf("wrapped: %w", validate.ErrInvalidOutput), "invalid_output"},
		{"component error", fmt.Errorf("wrapped: %w", ce), "component_error"},
		{"cancelled", fmt.Errorf("tool: %w", context.Canceled), "cancelled"},
		{"timeout", fmt.Errorf("tool: %w", context.DeadlineExceeded), "timeout"},
		{"launch", fmt.Errorf("%w: no binary", component.ErrLaunch), "launch_failed"},
		{"transport", fmt.Errorf("%w: broken pipe", component.ErrTransport), "transport"},
		{"anything else", errors.New("mystery"), "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ErrorClass(tt.err); got != tt.want {
				t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

func TestOnceHandlerRateLimits(t *testing.T) {
	t.Parallel()
	buf := &testkit.SyncBuffer{}
	h := &onceHandler{log: hclog.New(&hclog.LoggerOptions{Output: buf}), every: 500 * time.Millisecond}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { h.Handle(fmt.Errorf("export %d failed", i)) })
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "trace export failed"); n != 1 {
		t.Fatalf("%d warnings for a burst of 50 errors, want 1:\n%s", n, buf)
	}
	time.Sleep(600 * time.Millisecond)
	h.Handle(errors.New("again"))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[1], "similar_errors_suppressed=49") || !strings.Contains(lines[1], "again") {
		t.Errorf("after the period want a second warning counting the 49 held back:\n%s", buf)
	}
}

func newTestTracing(t *testing.T) (*Tracing, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tr, err := NewTracing(context.Background(), Options{Exporters: []sdktrace.SpanExporter{exp}, Syncer: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Shutdown(context.Background()) })
	return tr, exp
}

// spanView is what the tests compare of a span.
type spanView struct {
	Name   string
	Kind   trace.SpanKind
	Attrs  map[string]string
	Status codes.Code
	Events []string
}

func viewOf(s tracetest.SpanStub) spanView {
	v := spanView{Name: s.Name, Kind: s.SpanKind, Attrs: map[string]string{}, Status: s.Status.Code}
	for _, a := range s.Attributes {
		v.Attrs[string(a.Key)] = a.Value.String()
	}
	for _, e := range s.Events {
		v.Events = append(v.Events, e.Name)
	}
	return v
}

func TestTracingProcessorTool(t *testing.T) {
	t.Parallel()
	identity := map[string]string{
		"nexus.component.kind": "tool", "nexus.component.name": "t",
		"nexus.plugin.name": "acme", "nexus.plugin.version": "1.2.3",
	}
	with := func(extra map[string]string) map[string]string {
		m := map[string]string{}
		for k, v := range identity {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name   string
		origin func() component.Origin
		err    error
		want   spanView
	}{
		{
			name:   "ok with a known origin",
			origin: func() component.Origin { return component.Origin{SHA256: "abc123", Protocol: 1, PID: 7} },
			want: spanView{Name: "tool.call", Kind: trace.SpanKindClient, Status: codes.Unset,
				Attrs: with(map[string]string{"nexus.plugin.sha256": "abc123", "nexus.protocol.version": "1", "nexus.outcome": "ok"})},
		},
		{
			name:   "binary not hashed yet leaves the digest out",
			origin: func() component.Origin { return component.Origin{Protocol: 1} },
			want: spanView{Name: "tool.call", Kind: trace.SpanKindClient, Status: codes.Unset,
				Attrs: with(map[string]string{"nexus.protocol.version": "1", "nexus.outcome": "ok"})},
		},
		{
			name: "in-process entry has no origin",
			want: spanView{Name: "tool.call", Kind: trace.SpanKindClient, Status: codes.Unset, Attrs: with(map[string]string{"nexus.outcome": "ok"})},
		},
		{
			name: "component error carries its code",
			err:  &component.Error{Plugin: "acme", Kind: "tool", Component: "t", Code: "quota", Message: "no more"},
			want: spanView{Name: "tool.call", Kind: trace.SpanKindClient, Status: codes.Error, Events: []string{"exception"},
				Attrs: with(map[string]string{"nexus.outcome": "error", "nexus.error.class": "component_error", "nexus.error.code": "quota"})},
		},
		{
			name: "transport failure",
			err:  fmt.Errorf("%w: gone", component.ErrTransport),
			want: spanView{Name: "tool.call", Kind: trace.SpanKindClient, Status: codes.Error, Events: []string{"exception"},
				Attrs: with(map[string]string{"nexus.outcome": "error", "nexus.error.class": "transport"})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tr, exp := newTestTracing(t)
			r := registry.New[component.Tool](manifest.KindTool)
			r.Use(tr.Processors().Tools())
			var inner trace.SpanContext
			err := r.Register(registry.Meta{Plugin: "acme", Version: "1.2.3", Component: manifest.Component{Name: "t"}, Origin: tt.origin},
				component.ToolFunc(func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
					inner = trace.SpanContextFromContext(ctx)
					return in, tt.err
				}))
			if err != nil {
				t.Fatal(err)
			}
			tool, err := r.Get(context.Background(), "t")
			if err != nil {
				t.Fatal(err)
			}
			ctx, parent := tr.Tracer().Start(context.Background(), "caller")
			if _, err := tool.Call(ctx, json.RawMessage(`{}`)); !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want the tool's %v", err, tt.err)
			}
			parent.End()
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want the call's and the caller's", len(spans))
			}
			call := spans[0]
			if diff := cmp.Diff(tt.want, viewOf(call)); diff != "" {
				t.Errorf("call span (-want +got):\n%s", diff)
			}
			if call.Parent.SpanID() != parent.SpanContext().SpanID() || call.SpanContext.TraceID() != parent.SpanContext().TraceID() {
				t.Errorf("call span is not a child of the caller's span")
			}
			if inner.SpanID() != call.SpanContext.SpanID() {
				t.Errorf("the tool ran under span %s, want the call span %s", inner.SpanID(), call.SpanContext.SpanID())
			}
		})
	}
}

type twoInstances struct{ err error }

func (f twoInstances) Instances(context.Context, json.RawMessage) iter.Seq2[component.Instance, error] {
	return func(yield func(component.Instance, error) bool) {
		if !yield(component.Instance{ID: "a"}, nil) {
			return
		}
		if f.err != nil {
			yield(component.Instance{}, f.err)
			return
		}
		yield(component.Instance{ID: "b"}, nil)
	}
}

func (f twoInstances) Evaluate(context.Context, json.RawMessage, component.Instance, json.RawMessage) (component.Result, error) {
	return component.Result{Score: 1}, nil
}

func TestTracingProcessorAgentAndTask(t *testing.T) {
	t.Parallel()
	tr, exp := newTestTracing(t)
	agents := registry.New[component.Agent](manifest.KindAgent)
	agents.Use(tr.Processors().Agents())
	tasks := registry.New[component.Task](manifest.KindTask)
	tasks.Use(tr.Processors().Tasks())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(agents.Register(registry.Meta{Component: manifest.Component{Name: "ag"}}, component.AgentFunc(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{}`), nil
	})))
	must(tasks.Register(registry.Meta{Component: manifest.Component{Name: "ok"}}, twoInstances{}))
	must(tasks.Register(registry.Meta{Component: manifest.Component{Name: "bad"}}, twoInstances{err: &component.Error{Code: "broken"}}))
	ctx := context.Background()
	agent, err := agents.Get(ctx, "ag")
	must(err)
	_, err = agent.Run(ctx, nil)
	must(err)
	ok, err := tasks.Get(ctx, "ok")
	must(err)
	for range ok.Instances(ctx, nil) {
		break // a consumer stopping early still ends the span
	}
	_, err = ok.Evaluate(ctx, nil, component.Instance{}, nil)
	must(err)
	bad, err := tasks.Get(ctx, "bad")
	must(err)
	var errs int
	for _, err := range bad.Instances(ctx, nil) {
		if err != nil {
			errs++
		}
	}
	if errs != 1 {
		t.Errorf("%d errors from the failing task, want 1", errs)
	}
	type row struct{ Name, Component, Outcome, Code string }
	var got []row
	for _, s := range exp.GetSpans() {
		v := viewOf(s)
		got = append(got, row{v.Name, v.Attrs["nexus.component.name"], v.Attrs["nexus.outcome"], v.Attrs["nexus.error.code"]})
	}
	want := []row{
		{"agent.run", "ag", "ok", ""},
		{"task.instances", "ok", "ok", ""},
		{"task.evaluate", "ok", "ok", ""},
		{"task.instances", "bad", "error", "broken"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

func TestNoExporterTracesNothing(t *testing.T) {
	t.Parallel()
	tr, err := NewTracing(context.Background(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled() {
		t.Error("Enabled with no exporter")
	}
	_, span := tr.Tracer().Start(context.Background(), "x")
	if span.IsRecording() || span.SpanContext().IsValid() {
		t.Error("tracer without exporters records")
	}
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

func TestImportSpansReachEveryExporter(t *testing.T) {
	t.Parallel()
	a, b := tracetest.NewInMemoryExporter(), tracetest.NewInMemoryExporter()
	tr, err := NewTracing(context.Background(), Options{Exporters: []sdktrace.SpanExporter{a, b}, Syncer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(context.Background())
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, TraceFlags: trace.FlagsSampled})
	stub := tracetest.SpanStub{Name: "plugin.tool.call", SpanContext: sc, StartTime: time.Unix(1, 0), EndTime: time.Unix(2, 0)}
	tr.ImportSpans([]sdktrace.ReadOnlySpan{stub.Snapshot()})
	for name, e := range map[string]*tracetest.InMemoryExporter{"a": a, "b": b} {
		if got := e.GetSpans(); len(got) != 1 || got[0].Name != "plugin.tool.call" || got[0].SpanContext.TraceID() != sc.TraceID() {
			t.Errorf("exporter %s got %v, want the imported span", name, got)
		}
	}
}

func TestTraceFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	tr, err := NewTracing(context.Background(), Options{TraceFile: path})
	if err != nil {
		t.Fatal(err)
	}
	_, span := tr.Tracer().Start(context.Background(), "written")
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tid := span.SpanContext().TraceID().String()
	if strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), `"name":"written"`) || !strings.Contains(string(b), `"traceId":"`+tid+`"`) {
		t.Errorf("trace file, want one line holding the span with its hex trace id %s:\n%s", tid, b)
	}

	_, err = NewTracing(context.Background(), Options{TraceFile: filepath.Join(t.TempDir(), "no", "such", "dir", "t.jsonl")})
	if err == nil || !strings.Contains(err.Error(), "--trace") {
		t.Errorf("unwritable trace file: err = %v, want one naming --trace", err)
	}
}

// TestEnvExporter sets environment variables, so it cannot run in
// parallel.
func TestEnvExporter(t *testing.T) {
	for _, k := range []string{"OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(k, "")
	}
	tests := []struct {
		name    string
		env     map[string]string
		want    bool // an exporter is built
		wantErr string
	}{
		{name: "nothing set"},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}},
		{name: "endpoint alone means http", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, want: true},
		{name: "traces endpoint and grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: true},
		{name: "otlp without endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{name: "unsupported exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, wantErr: `OTEL_TRACES_EXPORTER="zipkin"`},
		{name: "unsupported protocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, wantErr: `"http/json": use grpc or http/protobuf`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			exp, err := envExporter(context.Background())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (exp != nil) != tt.want {
				t.Errorf("exporter built = %v, want %v", exp != nil, tt.want)
			}
			if exp != nil {
				if err := exp.Shutdown(context.Background()); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestMetricsStats(t *testing.T) {
	t.Parallel()
	m, err := NewMetrics()
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown(context.Background())
	tools := registry.New[component.Tool](manifest.KindTool)
	tools.Use(m.Processors().Tools())
	tasks := registry.New[component.Task](manifest.KindTask)
	tasks.Use(m.Processors().Tasks())
	fail := &component.Error{Code: "x"}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tools.Register(registry.Meta{Plugin: "p", Component: manifest.Component{Name: "flaky"}}, component.ToolFunc(func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		if string(in) == "fail" {
			return nil, fail
		}
		return in, nil
	})))
	must(tools.Register(registry.Meta{Plugin: "p", Component: manifest.Component{Name: "slow"}}, component.ToolFunc(func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		time.Sleep(3 * time.Millisecond)
		return in, nil
	})))
	must(tasks.Register(registry.Meta{Plugin: "p", Component: manifest.Component{Name: "k"}}, twoInstances{}))
	ctx := context.Background()
	flaky, _ := tools.Get(ctx, "flaky")
	for _, in := range []string{"ok", "fail", "ok", "fail", "fail"} {
		flaky.Call(ctx, json.RawMessage(in))
	}
	slow, _ := tools.Get(ctx, "slow")
	for range 2 {
		slow.Call(ctx, nil)
	}
	k, _ := tasks.Get(ctx, "k")
	for range k.Instances(ctx, nil) {
	}
	k.Evaluate(ctx, nil, component.Instance{}, nil)
	k.Evaluate(ctx, nil, component.Instance{}, nil)

	stats, err := m.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stat{
		{Component: "p/flaky", Op: "tool.call", Calls: 5, Errors: 3},
		{Component: "p/k", Op: "task.evaluate", Calls: 2},
		{Component: "p/k", Op: "task.instances", Calls: 1},
		{Component: "p/slow", Op: "tool.call", Calls: 2},
	}
	if diff := cmp.Diff(want, stats, cmpopts.IgnoreFields(Stat{}, "MeanMS", "P50MS", "P99MS")); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	for _, s := range stats {
		if s.Component == "p/slow" && (s.MeanMS < 3 || s.P50MS < 3 || s.P99MS < s.P50MS) {
			t.Errorf("slow tool: mean %vms p50 %vms p99 %vms, want at least its 3ms sleep", s.MeanMS, s.P50MS, s.P99MS)
		}
	}
}
