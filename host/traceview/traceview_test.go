package traceview_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/telemetry"
	"github.com/nexus-eval/nexus/host/traceview"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRenderGolden(t *testing.T) {
	t.Parallel()
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/*.jsonl (%v)", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(in)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			spans, err := traceview.Read(f)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := traceview.Render(&got, spans); err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".golden")
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("Render(%s) (-want +got):\n%s", in, diff)
			}
		})
	}
}

func TestReadHexAndBase64IDs(t *testing.T) {
	t.Parallel()
	// The same span, its ids in the OTLP/JSON hex form and in protobuf's
	// base64 form (what older trace files hold).
	const hexLine = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","parentSpanId":"b7ad6b7169203331","name":"s","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`
	const b64Line = `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"CvdlGRbNQ92ESOshHIAxnA==","spanId":"APBnqgupArc=","parentSpanId":"t61rcWkgMzE=","name":"s","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}`
	want := []string{"0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "b7ad6b7169203331"}
	for name, line := range map[string]string{"hex": hexLine, "base64": b64Line} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			spans, err := traceview.Read(strings.NewReader(line))
			if err != nil {
				t.Fatal(err)
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			got := []string{spans[0].TraceID, spans[0].SpanID, spans[0].ParentID}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadMalformedLineNamesIt(t *testing.T) {
	t.Parallel()
	good := `{"resourceSpans":[]}`
	tests := []struct {
		name     string
		input    string
		wantLine string
	}{
		{"not JSON", good + "\n" + good + "\n{oops\n", "line 3:"},
		{"blank lines still count", "\n\n" + good + "\n\n[1, 2]\n", "line 5:"},
		{"wrong field type", `{"resourceSpans": 5}`, "line 1:"},
		{"bad timestamp", good + "\n" + `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x","startTimeUnixNano":"soon"}]}]}]}`, "line 2:"},
		{"two documents on one line", good + " " + good, "line 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			spans, err := traceview.Read(strings.NewReader(tt.input))
			if err == nil {
				t.Fatalf("no error, %d spans", len(spans))
			}
			if !strings.HasPrefix(err.Error(), tt.wantLine) || !strings.Contains(err.Error(), "OTLP JSON") {
				t.Errorf("err = %v, want it to start with %q and say what the line should be", err, tt.wantLine)
			}
		})
	}
}

func TestReadIgnoresUnknownFields(t *testing.T) {
	t.Parallel()
	line := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"s","fromTheFuture":{"x":1}}]}]}],"alsoNew":true}`
	spans, err := traceview.Read(strings.NewReader(line))
	if err != nil || len(spans) != 1 || spans[0].Name != "s" {
		t.Errorf("spans %v err %v, want the one span", spans, err)
	}
}

type nopCloser struct{ *bytes.Buffer }

func (nopCloser) Close() error { return nil }

func TestFileExporterRoundTrip(t *testing.T) {
	t.Parallel()
	var file bytes.Buffer
	exp := telemetry.NewFileExporter(nopCloser{&file})
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "round-trip"))),
	)
	tr := tp.Tracer("test")
	ctx, root := tr.Start(context.Background(), "root")
	cctx, child := tr.Start(ctx, "child", trace.WithAttributes(attribute.String("nexus.plugin.name", "echo"), attribute.Int("n", 3)))
	_, grandchild := tr.Start(cctx, "grandchild")
	grandchild.RecordError(errors.New("boom"))
	grandchild.SetStatus(codes.Error, "boom")
	grandchild.End()
	child.End()
	_, sibling := tr.Start(ctx, "sibling")
	sibling.End()
	root.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	tid := root.SpanContext().TraceID().String()
	// The OTLP/JSON encoding writes ids as hex, which any OTLP reader
	// understands; protobuf's default base64 would be misread.
	if !strings.Contains(file.String(), `"traceId":"`+tid+`"`) {
		t.Errorf("file does not hold the trace id %s in hex:\n%s", tid, file.String())
	}
	if n := strings.Count(file.String(), "\n"); n != 4 {
		t.Errorf("%d lines, want one per span with a syncer (4)", n)
	}

	spans, err := traceview.Read(&file)
	if err != nil {
		t.Fatal(err)
	}
	type view struct {
		Name, TraceID, SpanID, ParentID, Service, Error string
		IsError                                         bool
		Attrs                                           map[string]string
	}
	id := func(s trace.Span) string { return s.SpanContext().SpanID().String() }
	var got []view
	for _, s := range spans {
		got = append(got, view{s.Name, s.TraceID, s.SpanID, s.ParentID, s.Service, s.Error, s.IsError, s.Attributes})
	}
	want := []view{
		{"grandchild", tid, id(grandchild), id(child), "round-trip", "boom", true, map[string]string{}},
		{"child", tid, id(child), id(root), "round-trip", "", false, map[string]string{"nexus.plugin.name": "echo", "n": "3"}},
		{"sibling", tid, id(sibling), id(root), "round-trip", "", false, map[string]string{}},
		{"root", tid, id(root), "", "round-trip", "", false, map[string]string{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans read back (-want +got):\n%s", diff)
	}
	for _, s := range spans {
		if s.Duration() < 0 || s.Start.IsZero() {
			t.Errorf("span %s: start %v duration %v", s.Name, s.Start, s.Duration())
		}
	}
}

func TestRenderWriteError(t *testing.T) {
	t.Parallel()
	spans := []traceview.Span{{TraceID: "t", SpanID: "s", Name: "x"}}
	want := errors.New("disk full")
	if err := traceview.Render(failWriter{want}, spans); !errors.Is(err, want) {
		t.Errorf("err = %v, want the writer's error", err)
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }
