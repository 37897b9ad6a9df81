package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/nexus-eval/nexus/internal/testkit"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/telemetry"
	"github.com/nexus-eval/nexus/host/validate"
	"github.com/nexus-eval/nexus/manifest"
)

// logLines returns the lines of log l containing s.
func logLines(l *testkit.SyncBuffer, s string) []string {
	var out []string
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// pipelineHost is a host with the full pipeline over real plugin
// processes, its spans recorded in memory and its log captured.
type pipelineHost struct {
	h       *host.Host
	exp     *tracetest.InMemoryExporter
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
	log     *testkit.SyncBuffer
}

func newPipelineHost(t *testing.T, topts telemetry.Options, pkgs ...string) *pipelineHost {
	t.Helper()
	p := &pipelineHost{exp: tracetest.NewInMemoryExporter(), log: &testkit.SyncBuffer{}}
	logger := hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(p.log, testWriter{t}), Level: hclog.Info})
	topts.Exporters = append(topts.Exporters, p.exp)
	topts.Syncer = true
	topts.Logger = logger
	var err error
	if p.tracing, err = telemetry.NewTracing(context.Background(), topts); err != nil {
		t.Fatal(err)
	}
	if p.metrics, err = telemetry.NewMetrics(); err != nil {
		t.Fatal(err)
	}
	p.h = host.New(host.Options{Logger: logger, Tracing: p.tracing, Metrics: p.metrics})
	for _, d := range p.h.Discover([]manifest.Root{{Dir: pluginRoot(t, pkgs...), Explicit: true}}) {
		t.Logf("diagnostic: %s", d)
	}
	t.Cleanup(func() {
		p.h.Close()
		p.tracing.Shutdown(context.Background())
		p.metrics.Shutdown(context.Background())
	})
	return p
}

// spans closes the host, which flushes the spans still in the plugins,
// and returns every span exported.
func (p *pipelineHost) spans(t *testing.T) tracetest.SpanStubs {
	t.Helper()
	if err := p.h.Close(); err != nil {
		t.Fatal(err)
	}
	return p.exp.GetSpans()
}

func (p *pipelineHost) tool(t *testing.T, name string) component.Tool {
	t.Helper()
	tool, err := p.h.Tools.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func named(spans tracetest.SpanStubs, name string) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func children(spans tracetest.SpanStubs, parent tracetest.SpanStub) tracetest.SpanStubs {
	var out tracetest.SpanStubs
	for _, s := range spans {
		if s.Parent.SpanID() == parent.SpanContext.SpanID() && s.SpanContext.TraceID() == parent.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

func spanIDs(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.SpanContext.SpanID().String())
	}
	return out
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, a := range s.Attributes {
		m[string(a.Key)] = a.Value.String()
	}
	return m
}

func service(s tracetest.SpanStub) string {
	v, _ := s.Resource.Set().Value("service.name")
	return v.AsString()
}

func binarySHA256(t *testing.T, pkg string) string {
	t.Helper()
	bin, err := builder.Binary(pkg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func TestPipelineToolTraceCrossesTheProcessBoundary(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	echo := p.tool(t, "echo")

	// The binary is hashed in the background after launch; calls go on
	// meanwhile, their spans without the digest. Call until one has it.
	ctx, parent := p.tracing.Tracer().Start(context.Background(), "test.parent")
	deadline := time.Now().Add(5 * time.Second)
	calls := 0
	for {
		out, err := echo.Call(ctx, json.RawMessage(`{"text": "hi"}`))
		if err != nil || string(out) != `{"text":"hi"}` {
			t.Fatalf("echo = %s, %v", out, err)
		}
		calls++
		last := p.exp.GetSpans()
		if got := named(last, "tool.call"); len(got) > 0 && attrs(got[len(got)-1])["nexus.plugin.sha256"] != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no tool.call span carried the binary's sha256 after %d calls", calls)
		}
		time.Sleep(10 * time.Millisecond)
	}
	parent.End()
	spans := p.spans(t)

	roots := named(spans, "test.parent")
	hostSpans := named(spans, "tool.call")
	pluginSpans := named(spans, "plugin.tool.call")
	if len(roots) != 1 || len(hostSpans) != calls || len(pluginSpans) != calls {
		t.Fatalf("%d test.parent, %d tool.call, %d plugin.tool.call spans after %d calls; want 1, %d, %d", len(roots), len(hostSpans), len(pluginSpans), calls, calls, calls)
	}
	root := roots[0]
	if diff := cmp.Diff(spanIDs(hostSpans), spanIDs(children(spans, root)), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
		t.Errorf("the host's call spans are not exactly the children of the test's span:\n%s", diff)
	}
	wantSHA := binarySHA256(t, "test/testplugins/echo")
	for i, hs := range hostSpans {
		if hs.SpanContext.TraceID() != root.SpanContext.TraceID() {
			t.Errorf("call %d: trace %s, want the test's %s", i, hs.SpanContext.TraceID(), root.SpanContext.TraceID())
		}
		kids := children(spans, hs)
		if len(kids) != 1 || kids[0].Name != "plugin.tool.call" {
			t.Fatalf("call %d: host span has children %v, want one plugin.tool.call", i, kids)
		}
		ps := kids[0]
		if ps.SpanContext.TraceID() != hs.SpanContext.TraceID() {
			t.Errorf("call %d: plugin span in trace %s, host span in %s", i, ps.SpanContext.TraceID(), hs.SpanContext.TraceID())
		}
		// The plugin span lies within the host span.
		if ps.StartTime.Before(hs.StartTime) || ps.EndTime.After(hs.EndTime) {
			t.Errorf("call %d: plugin span [%v, %v] outside host span [%v, %v]", i, ps.StartTime, ps.EndTime, hs.StartTime, hs.EndTime)
		}
		want := map[string]string{
			"nexus.component.kind":   "tool",
			"nexus.component.name":   "echo",
			"nexus.plugin.name":      "echo",
			"nexus.plugin.version":   "0.1.0",
			"nexus.plugin.sha256":    wantSHA,
			"nexus.protocol.version": "1",
			"nexus.outcome":          "ok",
		}
		got := attrs(hs)
		if i < len(hostSpans)-1 {
			// Earlier calls may predate the digest: then it is absent,
			// never empty or wrong.
			if sha, ok := got["nexus.plugin.sha256"]; !ok {
				delete(want, "nexus.plugin.sha256")
			} else if sha != wantSHA {
				t.Errorf("call %d: sha256 %q, want %s", i, sha, wantSHA)
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("call %d: host span attributes (-want +got):\n%s", i, diff)
		}
		if hs.SpanKind != trace.SpanKindClient || ps.SpanKind != trace.SpanKindServer {
			t.Errorf("call %d: kinds host %v plugin %v, want client and server", i, hs.SpanKind, ps.SpanKind)
		}
		if diff := cmp.Diff(map[string]string{"nexus.component.name": "echo", "nexus.plugin.name": "echo", "nexus.plugin.version": "0.1.0"}, attrs(ps)); diff != "" {
			t.Errorf("call %d: plugin span attributes (-want +got):\n%s", i, diff)
		}
		if service(hs) != "nexus-host" || service(ps) != "nexus-plugin-echo" {
			t.Errorf("call %d: services %q and %q, want nexus-host and nexus-plugin-echo", i, service(hs), service(ps))
		}
	}
}

func TestPipelineAgentAndTaskSpans(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	ctx := context.Background()
	task, err := p.h.Tasks.Get(ctx, "count")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := p.h.Agents.Get(ctx, "parrot")
	if err != nil {
		t.Fatal(err)
	}
	ctx, parent := p.tracing.Tracer().Start(ctx, "test.eval")
	args := json.RawMessage(`{"n": 2}`)
	passed := 0
	for inst, err := range task.Instances(ctx, args) {
		if err != nil {
			t.Fatal(err)
		}
		out, err := agent.Run(ctx, inst.Data)
		if err != nil {
			t.Fatal(err)
		}
		res, err := task.Evaluate(ctx, args, inst, out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Passed {
			passed++
		}
	}
	parent.End()
	if passed != 2 {
		t.Errorf("%d of 2 instances passed", passed)
	}
	spans := p.spans(t)
	root := named(spans, "test.eval")
	if len(root) != 1 {
		t.Fatalf("%d test.eval spans", len(root))
	}
	type edge struct{ Host, Plugin, Component string }
	var got []edge
	for _, hs := range children(spans, root[0]) {
		e := edge{Host: hs.Name, Component: attrs(hs)["nexus.component.name"]}
		for _, ps := range children(spans, hs) {
			e.Plugin += ps.Name
		}
		got = append(got, e)
	}
	want := []edge{
		{"task.instances", "plugin.task.instances", "count"},
		{"agent.run", "plugin.agent.run", "parrot"},
		{"task.evaluate", "plugin.task.evaluate", "count"},
		{"agent.run", "plugin.agent.run", "parrot"},
		{"task.evaluate", "plugin.task.evaluate", "count"},
	}
	sortEdges := cmpopts.SortSlices(func(a, b edge) bool { return a.Host+a.Component < b.Host+b.Component })
	if diff := cmp.Diff(want, got, sortEdges); diff != "" {
		t.Errorf("spans under the test's span, with their plugin children (-want +got):\n%s", diff)
	}
	if n := len(spans); n != 1+2*len(want) {
		t.Errorf("%d spans in all, want %d", n, 1+2*len(want))
	}
}

func TestPipelineInvalidInputNeverReachesThePlugin(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	counter := p.tool(t, "counter")
	tests := []struct {
		name, input, pointer, keyword string
	}{
		{"wrong type", `{"tag": 5}`, "/tag", "type"},
		{"missing", `{}`, "", "required"},
		{"extra", `{"tag": "a", "more": 1}`, "/more", "additionalProperties"},
		{"not JSON", `{"tag"`, "", "json"},
	}
	for _, tt := range tests {
		_, err := counter.Call(context.Background(), json.RawMessage(tt.input))
		var ve *validate.Error
		if !errors.Is(err, validate.ErrInvalidInput) || !errors.As(err, &ve) {
			t.Fatalf("%s: err = %v, want ErrInvalidInput", tt.name, err)
		}
		if ve.Pointer != tt.pointer || ve.Keyword != tt.keyword || ve.Plugin != "echo" || ve.Component != "counter" {
			t.Errorf("%s: error at %q keyword %q (%s/%s), want %q %q echo/counter", tt.name, ve.Pointer, ve.Keyword, ve.Plugin, ve.Component, tt.pointer, tt.keyword)
		}
	}
	// The plugin's own count proves none of them ran.
	out, err := counter.Call(context.Background(), json.RawMessage(`{"tag": "first valid"}`))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"count":1}` {
		t.Errorf("counter = %s after %d invalid calls, want {\"count\":1}: an invalid input reached the plugin", out, len(tests))
	}

	spans := p.spans(t)
	hostSpans := named(spans, "tool.call")
	if len(hostSpans) != len(tests)+1 {
		t.Fatalf("%d tool.call spans, want %d", len(hostSpans), len(tests)+1)
	}
	var rejected, accepted int
	for _, hs := range hostSpans {
		a := attrs(hs)
		switch a["nexus.outcome"] {
		case "error":
			rejected++
			if a["nexus.error.class"] != "invalid_input" || hs.Status.Code != codes.Error {
				t.Errorf("rejected call: class %q status %v, want invalid_input and an error status", a["nexus.error.class"], hs.Status.Code)
			}
			if kids := children(spans, hs); len(kids) != 0 {
				t.Errorf("rejected call has plugin spans %v", kids)
			}
		case "ok":
			accepted++
			if kids := children(spans, hs); len(kids) != 1 {
				t.Errorf("accepted call has %d plugin spans, want 1", len(kids))
			}
		}
	}
	if rejected != len(tests) || accepted != 1 {
		t.Errorf("%d rejected and %d accepted spans, want %d and 1", rejected, accepted, len(tests))
	}
	if n := len(named(spans, "plugin.tool.call")); n != 1 {
		t.Errorf("%d plugin spans, want 1: the plugin ran only for the valid call", n)
	}
}

func TestPipelineDomainError(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	_, err := p.tool(t, "fail").Call(context.Background(), json.RawMessage(`{"text": "now"}`))
	var ce *component.Error
	if !errors.As(err, &ce) || ce.Code != "invalid_input" {
		t.Fatalf("err = %v, want the plugin's invalid_input error", err)
	}
	spans := p.spans(t)
	hs := named(spans, "tool.call")
	if len(hs) != 1 {
		t.Fatalf("%d tool.call spans", len(hs))
	}
	a := attrs(hs[0])
	if a["nexus.outcome"] != "error" || a["nexus.error.class"] != "component_error" || a["nexus.error.code"] != "invalid_input" {
		t.Errorf("host span attributes %v, want outcome error, class component_error, code invalid_input", a)
	}
	if hs[0].Status.Code != codes.Error || !strings.Contains(hs[0].Status.Description, "fail was asked to fail: now") {
		t.Errorf("host span status %+v, want an error with the plugin's message", hs[0].Status)
	}
	ps := children(spans, hs[0])
	if len(ps) != 1 || ps[0].Status.Code != codes.Error || !strings.Contains(ps[0].Status.Description, "fail was asked to fail") {
		t.Errorf("plugin spans %v, want one with the error status", ps)
	}
}

func TestPipelineUnsampledRecordsNothing(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{SampleRatio: 1e-12}, "test/testplugins/echo")
	echo := p.tool(t, "echo")
	for i := range 20 {
		in := fmt.Sprintf(`{"text": "%d"}`, i)
		out, err := echo.Call(context.Background(), json.RawMessage(in))
		if err != nil || string(out) != strings.ReplaceAll(in, " ", "") {
			t.Fatalf("call %d = %s, %v", i, out, err)
		}
	}
	if _, err := p.tool(t, "counter").Call(context.Background(), json.RawMessage(`{}`)); !errors.Is(err, validate.ErrInvalidInput) {
		t.Errorf("validation still applies unsampled: err = %v", err)
	}
	if spans := p.spans(t); len(spans) != 0 {
		t.Errorf("%d spans exported for unsampled calls, want 0: %v", len(spans), spans)
	}
	// Metrics do not depend on sampling.
	stats, err := p.metrics.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) == 0 || stats[len(stats)-1].Component != "echo/echo" || stats[len(stats)-1].Calls != 20 {
		t.Errorf("stats %+v, want 20 calls of echo/echo", stats)
	}
}

func TestPipelineMetrics(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	ctx := context.Background()
	for _, c := range []struct{ tool, input string }{
		{"echo", `{"text": "a"}`},
		{"echo", `{"text": "b"}`},
		{"echo", `{"text": 3}`}, // invalid input still counts as a call and an error
		{"fail", `{"text": "x"}`},
		{"counter", `{"tag": "t"}`},
	} {
		p.tool(t, c.tool).Call(ctx, json.RawMessage(c.input))
	}
	agent, err := p.h.Agents.Get(ctx, "parrot")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Run(ctx, json.RawMessage(`{"text": "x", "reference": {"text": "x"}}`)); err != nil {
		t.Fatal(err)
	}
	stats, err := p.metrics.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []telemetry.Stat{
		{Component: "echo/counter", Op: "tool.call", Calls: 1},
		{Component: "echo/echo", Op: "tool.call", Calls: 3, Errors: 1},
		{Component: "echo/fail", Op: "tool.call", Calls: 1, Errors: 1},
		{Component: "echo/parrot", Op: "agent.run", Calls: 1},
	}
	if diff := cmp.Diff(want, stats, cmpopts.IgnoreFields(telemetry.Stat{}, "MeanMS", "P50MS", "P99MS")); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	for _, s := range stats {
		if s.MeanMS <= 0 || s.P50MS <= 0 || s.P99MS < s.P50MS {
			t.Errorf("%s %s: mean %v p50 %v p99 %v, want positive latencies with p99 >= p50", s.Component, s.Op, s.MeanMS, s.P50MS, s.P99MS)
		}
	}
}

func TestPipelineInvalidOutputIsThePluginsBug(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/liar")
	tests := []struct {
		tool, pointer, keyword string
	}{
		{"negative", "/answer", "minimum"},
		{"wrongshape", "/name", "additionalProperties"},
	}
	for _, tt := range tests {
		out, err := p.tool(t, tt.tool).Call(context.Background(), json.RawMessage(`{"q": "?"}`))
		if !errors.Is(err, validate.ErrInvalidOutput) || errors.Is(err, validate.ErrInvalidInput) {
			t.Fatalf("%s: out %s err %v, want ErrInvalidOutput", tt.tool, out, err)
		}
		var ve *validate.Error
		errors.As(err, &ve)
		if ve.Plugin != "liar" || ve.Component != tt.tool || ve.Pointer != tt.pointer || ve.Keyword != tt.keyword {
			t.Errorf("%s: error %s/%s at %q keyword %q, want liar/%s at %q %q", tt.tool, ve.Plugin, ve.Component, ve.Pointer, ve.Keyword, tt.tool, tt.pointer, tt.keyword)
		}
		for _, w := range []string{`"liar/` + tt.tool + `"`, "invalid output", `bug in plugin "liar"`} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: message lacks %q: %v", tt.tool, w, err)
			}
		}
	}
	if out, err := p.tool(t, "honest").Call(context.Background(), json.RawMessage(`{"q": "?"}`)); err != nil || string(out) != `{"answer":42}` {
		t.Errorf("honest = %s, %v", out, err)
	}
	spans := p.spans(t)
	var classes []string
	for _, hs := range named(spans, "tool.call") {
		classes = append(classes, attrs(hs)["nexus.error.class"])
		// The plugin ran and, as far as it knows, succeeded.
		if kids := children(spans, hs); len(kids) != 1 || kids[0].Status.Code == codes.Error {
			t.Errorf("%s: plugin spans %v, want one successful", attrs(hs)["nexus.component.name"], kids)
		}
	}
	if diff := cmp.Diff([]string{"invalid_output", "invalid_output", ""}, classes); diff != "" {
		t.Errorf("error classes (-want +got):\n%s", diff)
	}
}

func TestPipelineHostileSpanBatches(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/spanspam")
	spam := p.tool(t, "spam")
	for range 2 {
		out, err := spam.Call(context.Background(), json.RawMessage(`{"repeat": 5}`))
		if err != nil {
			t.Fatalf("the call must succeed whatever the plugin sends the host service: %v", err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"malformed": "InvalidArgument", "oversized": "InvalidArgument", "dropped": "OK", "sent": 15.0}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("what the host answered the plugin (-want +got):\n%s", diff)
		}
	}
	spans := p.spans(t)
	var names []string
	for _, s := range spans {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"tool.call", "tool.call"}, names); diff != "" {
		t.Errorf("exported spans (-want +got): no plugin garbage may reach the exporter\n%s", diff)
	}
	for _, s := range named(spans, "tool.call") {
		if attrs(s)["nexus.outcome"] != "ok" {
			t.Errorf("host span %v, want outcome ok", attrs(s))
		}
	}
	// Ten bad batches of each kind: one warning per kind, naming the plugin.
	for _, w := range []string{"dropped a malformed span batch", "dropped an oversized span batch", "plugin dropped spans"} {
		lines := logLines(p.log, w)
		if len(lines) != 1 {
			t.Errorf("%d log lines with %q, want 1 (rate-limited):\n%s", len(lines), w, strings.Join(lines, "\n"))
			continue
		}
		if !strings.Contains(lines[0], "spanspam") || !strings.Contains(lines[0], "[WARN]") {
			t.Errorf("warning does not name the plugin: %s", lines[0])
		}
	}
}

func TestPipelinePluginLogsCarryTheTraceID(t *testing.T) {
	t.Parallel()
	p := newPipelineHost(t, telemetry.Options{}, "test/testplugins/echo")
	if _, err := p.tool(t, "log").Call(context.Background(), json.RawMessage(`{"text": "marker-7"}`)); err != nil {
		t.Fatal(err)
	}
	spans := p.spans(t) // Close waits for the plugin's stderr to drain
	hs := named(spans, "tool.call")
	ps := named(spans, "plugin.tool.call")
	if len(hs) != 1 || len(ps) != 1 {
		t.Fatalf("%d host and %d plugin spans, want 1 each", len(hs), len(ps))
	}
	lines := logLines(p.log, "echo log tool called")
	if len(lines) != 1 {
		t.Fatalf("%d host log lines from the plugin's log call, want 1:\n%s", len(lines), p.log)
	}
	line := lines[0]
	for _, w := range []string{
		"trace_id=" + hs[0].SpanContext.TraceID().String(),
		// The plugin logs inside its own span.
		"span_id=" + ps[0].SpanContext.SpanID().String(),
		"text=marker-7",
		"echo",
	} {
		if !strings.Contains(line, w) {
			t.Errorf("log line lacks %q:\n%s", w, line)
		}
	}
}

// TestPipelineUnreachableCollector sets the environment, so it cannot run
// in parallel.
func TestPipelineUnreachableCollector(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there any more
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+addr)
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "200")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "10")

	log := &testkit.SyncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Output: io.MultiWriter(log, testWriter{t}), Level: hclog.Info})
	tracing, err := telemetry.NewTracing(context.Background(), telemetry.Options{FromEnv: true, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	if !tracing.Enabled() {
		t.Fatal("the OTLP endpoint in the environment enabled no exporter")
	}
	h := host.New(host.Options{Logger: logger, Tracing: tracing})
	h.Discover([]manifest.Root{{Dir: pluginRoot(t, "test/testplugins/echo"), Explicit: true}})
	defer h.Close()
	echo, err := h.Tools.Get(context.Background(), "echo")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 50 {
		if _, err := echo.Call(context.Background(), json.RawMessage(`{"text": "x"}`)); err != nil {
			t.Fatalf("call %d failed with an unreachable collector: %v", i, err)
		}
		if i%10 == 9 {
			time.Sleep(20 * time.Millisecond) // let the batcher try to export
		}
	}
	callTime := time.Since(start)
	h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	shutStart := time.Now()
	tracing.Shutdown(ctx) // fails to export; its error is beside the point
	if d := time.Since(shutStart); d > 2*time.Second {
		t.Errorf("Shutdown took %v with a 500ms deadline", d)
	}
	if n := len(logLines(log, "trace export failed")); n != 1 {
		t.Errorf("%d \"trace export failed\" warnings, want exactly one for all the failed exports:\n%s", n, log)
	}
	t.Logf("50 calls in %v with an unreachable collector", callTime)
}
