// This file is section 3: warm calls of the echo tool through the Nexus
// host (registry lookup once, then Call in a loop) against its peers (an
// in-process call, a stock go-plugin gRPC plugin, an MCP stdio server),
// one caller at a time and with many concurrent callers. More paths split
// the difference: the host with its processors added one by one, the
// plugin with GOMAXPROCS=1, and the Nexus plugin behind a raw gRPC client
// from host/launch (no registry, no proxy, no processors).
package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/telemetry"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/manifest"
)

var warmCallSection = Section{Key: "warm", Title: "3. Warm call", Run: runWarmCall}

const (
	warmupCalls  = 2000
	seqRounds    = 10
	seqPerRound  = 2000 // 20,000 per path
	concCallers  = 64
	concRounds   = 8
	concPerRound = 4000 // 32,000 per path
)

// nexusEcho starts a host with opts on root and returns a checked call of
// its echo tool (looked up once) and a function closing the host.
func nexusEcho(ctx context.Context, root string, opts host.Options) (callFunc, func(), *host.Host, error) {
	h := host.New(opts)
	closeHost := onExit(func() { h.Close() })
	if ds := h.Discover([]manifest.Root{{Dir: root, Explicit: true}}); len(ds) != 0 {
		closeHost()
		return nil, nil, nil, fmt.Errorf("discover: %v", ds)
	}
	tool, err := h.Tools.Get(ctx, "echo")
	if err != nil {
		closeHost()
		return nil, nil, nil, err
	}
	call := func(ctx context.Context) error {
		out, err := tool.Call(ctx, echoInput)
		if err != nil {
			return err
		}
		if !bytes.Equal(out, echoInput) {
			return fmt.Errorf("nexus call returned %q, want %q", out, echoInput)
		}
		return nil
	}
	return call, closeHost, h, nil
}

// callFunc makes one checked echo call.
type callFunc func(ctx context.Context) error

// sequential makes n calls one after another.
func sequential(ctx context.Context, n int, call callFunc) ([]time.Duration, time.Duration, error) {
	lat := make([]time.Duration, n)
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		if err := call(ctx); err != nil {
			return nil, 0, err
		}
		lat[i] = time.Since(t0)
	}
	return lat, time.Since(start), nil
}

// concurrent makes n calls from callers goroutines.
func concurrent(ctx context.Context, callers, n int, call callFunc) ([]time.Duration, time.Duration, error) {
	var next atomic.Int64
	lats := make([][]time.Duration, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range callers {
		wg.Go(func() {
			lat := make([]time.Duration, 0, n/callers+1)
			for next.Add(1) <= int64(n) {
				t0 := time.Now()
				if err := call(ctx); err != nil {
					errs[g] = err
					return
				}
				lat = append(lat, time.Since(t0))
			}
			lats[g] = lat
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for g := range callers {
		if errs[g] != nil {
			return nil, 0, errs[g]
		}
		all = append(all, lats[g]...)
	}
	return all, elapsed, nil
}

type warmPath struct {
	name string
	call callFunc

	seq, conc           []time.Duration
	seqRates, concRates []float64 // calls/s of each round
}

// fullPipeline is the host options of the full pipeline: validation,
// tracing sampled into a discarding exporter, and metrics; procs is the
// plugins' GOMAXPROCS setting (host.Options.PluginProcs).
func fullPipeline(ctx context.Context, procs int) (host.Options, error) {
	tr, err := discardTracing(ctx, 1)
	if err != nil {
		return host.Options{}, err
	}
	m, err := telemetry.NewMetrics()
	return host.Options{Tracing: tr, Metrics: m, PluginProcs: procs}, err
}

// roundTimeout bounds one round of one path: a stuck call fails the run,
// naming the path, instead of hanging it.
const roundTimeout = time.Minute

// round makes n calls from callers goroutines (one: sequential).
func (wp *warmPath) round(ctx context.Context, callers, n int) ([]time.Duration, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, roundTimeout)
	defer cancel()
	var lat []time.Duration
	var el time.Duration
	var err error
	if callers == 1 {
		lat, el, err = sequential(ctx, n, wp.call)
	} else {
		lat, el, err = concurrent(ctx, callers, n, wp.call)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%s, %d callers: %w", wp.name, callers, err)
	}
	return lat, el, nil
}

func runWarmCall(env *Env, doc *Doc) error {
	ctx := context.Background()
	root, err := env.PluginRoot("warm", echoPkg)
	if err != nil {
		return err
	}
	stockBin, err := env.Binary("bench/stockecho")
	if err != nil {
		return err
	}
	mcpBin, err := env.Binary(mcpPkg)
	if err != nil {
		return err
	}

	// The peers first, then Nexus: the registry lookup once, then Call,
	// with the processor pipeline built up step by step.
	inproc := &warmPath{name: "in-process Go call (same JSON decode/encode)", call: inprocCall}
	stock := &warmPath{name: "stock go-plugin (`bench/stockecho`)"}
	mcpPath := &warmPath{name: "MCP stdio (`bench/mcpecho`, official Go SDK)"}
	variants := []struct {
		name string
		opts func() (host.Options, error)
	}{
		{"Nexus, no processors, plugin on every core", func() (host.Options, error) {
			return host.Options{NoProcessors: true, PluginProcs: -1}, nil
		}},
		{"Nexus, no processors (plugin GOMAXPROCS=1, the default)", func() (host.Options, error) {
			return host.Options{NoProcessors: true}, nil
		}},
		{"Nexus + validation", func() (host.Options, error) { return host.Options{}, nil }},
		{"Nexus + validation + tracing, not sampled", func() (host.Options, error) {
			tr, err := discardTracing(ctx, 1e-12)
			return host.Options{Tracing: tr}, err
		}},
		{"Nexus + validation + tracing, sampled", func() (host.Options, error) {
			tr, err := discardTracing(ctx, 1)
			return host.Options{Tracing: tr}, err
		}},
		{"Nexus, full pipeline, plugin on every core", func() (host.Options, error) {
			return fullPipeline(ctx, -1)
		}},
		{"**Nexus, full pipeline** (validation + tracing sampled + metrics; the default GOMAXPROCS=1)", func() (host.Options, error) {
			return fullPipeline(ctx, 0)
		}},
	}
	var h *host.Host
	paths := []*warmPath{inproc, stock, mcpPath}
	for _, v := range variants {
		opts, err := v.opts()
		if err != nil {
			return err
		}
		call, closeHost, vh, err := nexusEcho(ctx, root, opts)
		if err != nil {
			return err
		}
		defer closeHost()
		h = vh
		paths = append(paths, &warmPath{name: v.name, call: call})
	}
	// The defaults (plugin GOMAXPROCS=1) first; the every-core rows are
	// the comparison that justifies them.
	bare, full, fullAll := paths[4], paths[9], paths[8]

	// Diagnostic: the same plugin binary, called with the generated gRPC
	// client directly (no registry proxy, no per-call process lookup).
	l := launch.New()
	closeLauncher := onExit(func() { l.Close() })
	defer closeLauncher()
	p, err := l.Slot(h.Manifests()[0]).Process(ctx)
	if err != nil {
		return err
	}
	rawCall := func(ctx context.Context) error {
		resp, err := p.RPC.Tool.Call(ctx, &pluginv1.CallRequest{Name: "echo", Input: echoInput})
		if err != nil {
			return err
		}
		if !bytes.Equal(resp.GetOutput(), echoInput) {
			return fmt.Errorf("raw call returned %q (error %v), want %q", resp.GetOutput(), resp.GetError(), echoInput)
		}
		return nil
	}

	stockTool, stopStock, err := startStock(stockBin)
	if err != nil {
		return err
	}
	defer stopStock()
	stock.call = func(ctx context.Context) error { return stockCall(ctx, stockTool) }

	mcps, err := mcpConnect(ctx, mcpBin)
	if err != nil {
		return err
	}
	defer mcps.close()
	mcpPath.call = mcps.call
	paths = append(paths, &warmPath{name: "Nexus plugin, raw gRPC client (no host code)", call: rawCall})

	for _, wp := range paths {
		if _, _, err := wp.round(ctx, 1, warmupCalls); err != nil {
			return err
		}
		if _, _, err := wp.round(ctx, concCallers, warmupCalls); err != nil {
			return err
		}
	}
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	for r := range seqRounds {
		for j := range paths {
			wp := paths[(r+j)%len(paths)]
			runtime.GC()
			lat, el, err := wp.round(ctx, 1, seqPerRound)
			if err != nil {
				return err
			}
			wp.seq, wp.seqRates = append(wp.seq, lat...), append(wp.seqRates, rate(len(lat), el))
		}
	}
	for r := range concRounds {
		for j := range paths {
			wp := paths[(r+j)%len(paths)]
			runtime.GC()
			lat, el, err := wp.round(ctx, concCallers, concPerRound)
			if err != nil {
				return err
			}
			wp.conc, wp.concRates = append(wp.conc, lat...), append(wp.concRates, rate(len(lat), el))
		}
	}

	doc.P("The same echo tool, called with `{\"text\":\"hello\"}` and answering it, in every "+
		"way a user could pick: a Go function in this process doing the same JSON decode/encode; "+
		"`bench/stockecho`, a plain go-plugin gRPC plugin serving the same generated "+
		"`ToolService` messages, launched with a plain `plugin.NewClient`; `bench/mcpecho`, an MCP "+
		"server over stdio written with the official Go SDK (`mcp.AddTool`, a typed handler; the "+
		"client is `mcp.NewClient` + `mcp.CommandTransport`, calling `CallTool`); and the echo tool "+
		"of `test/testplugins/echo` through the Nexus host (`h.Tools.Get` once, then `Call` in a "+
		"loop). The Nexus rows add the processors one at a time: validation (input and output "+
		"against the manifest's JSON Schemas), tracing (a host span per call, W3C context into "+
		"the plugin, a plugin span exported back to the host in batches; the host's exporter "+
		"discards, so only Nexus's own work is measured), metrics; two rows start the plugin "+
		"on every core instead of the default GOMAXPROCS=1. The last row calls the Nexus plugin with the generated gRPC "+
		"client directly. Every answer is checked. "+
		"%s warm-up calls per path, then short rounds interleaved across paths (so load from "+
		"elsewhere hits every path alike); calls/s is the median of the rounds' rates (calls "+
		"over the round's wall time). Latency under 64 callers includes queueing behind the "+
		"other callers.", Count(warmupCalls))
	doc.H3("One caller")
	base := Summarize(stock.seq)
	baseRate := Median(stock.seqRates)
	t := NewTable("path", "calls", "p50", "p99", "mean", "calls/s", "p50 ÷ stock", "p99 ÷ stock", "calls/s ÷ stock")
	for _, wp := range paths {
		s := Summarize(wp.seq)
		r := Median(wp.seqRates)
		t.Row(wp.name, Count(uint64(s.N)), Dur(s.P50), Dur(s.P99), Dur(s.Mean), Rate(r),
			DurRatio(s.P50, base.P50), DurRatio(s.P99, base.P99), Ratio(r, baseRate))
	}
	doc.Table(t)

	doc.H3(fmt.Sprintf("%d concurrent callers", concCallers))
	cbase := Summarize(stock.conc)
	cbaseRate := Median(stock.concRates)
	ct := NewTable("path", "calls", "calls/s", "p50", "p99", "calls/s ÷ stock", "p50 ÷ stock")
	for _, wp := range paths {
		s := Summarize(wp.conc)
		r := Median(wp.concRates)
		ct.Row(wp.name, Count(uint64(s.N)), Rate(r), Dur(s.P50), Dur(s.P99), Ratio(r, cbaseRate), DurRatio(s.P50, cbase.P50))
	}
	doc.Table(ct)
	bs, fs := Summarize(bare.seq), Summarize(full.seq)
	doc.P("Full pipeline ÷ no processors: **%s** at p50 (target ≤ 1.10×); full pipeline ÷ stock go-plugin: **%s** at p50.",
		DurRatio(fs.P50, bs.P50), DurRatio(fs.P50, base.P50))

	// The peer goals: a call's cost relative to the peer's, one caller
	// by p50 latency, 64 callers by throughput (time per call is its
	// inverse).
	doc.H3("Peer goals")
	ms := Summarize(mcpPath.seq)
	mcpRate := Median(mcpPath.concRates)
	gt := NewTable("goal", "Nexus path", "1 caller: p50 ratio", "", "64 callers: calls/s ratio", "").AlignLeft()
	for i, wp := range []*warmPath{full, fullAll} {
		s, r := Summarize(wp.seq), Median(wp.concRates)
		vsStock, vsStockC := float64(s.P50)/float64(base.P50), cbaseRate/r
		vsMCP, vsMCPC := float64(ms.P50)/float64(s.P50), r/mcpRate
		gt.Row("warm call ≤ 0.6× stock go-plugin", wp.name,
			fmt.Sprintf("Nexus p50 ÷ stock p50 = %.2f×", vsStock), PassFail(vsStock <= 0.6),
			fmt.Sprintf("stock calls/s ÷ Nexus calls/s = %.2f×", vsStockC), PassFail(vsStockC <= 0.6))
		gt.Row("warm call ≥ 2.5× faster than MCP stdio", wp.name,
			fmt.Sprintf("MCP p50 ÷ Nexus p50 = %.2f×", vsMCP), PassFail(vsMCP >= 2.5),
			fmt.Sprintf("Nexus calls/s ÷ MCP calls/s = %.2f×", vsMCPC), PassFail(vsMCPC >= 2.5))
		if i == 0 {
			recordGoal("warm call ≤ 0.6× stock go-plugin (full pipeline, 1 caller, p50)", fmt.Sprintf("%.2f×", vsStock), vsStock <= 0.6)
			recordGoal("warm call ≤ 0.6× stock go-plugin (full pipeline, 64 callers, time per call)", fmt.Sprintf("%.2f×", vsStockC), vsStockC <= 0.6)
			recordGoal("warm call ≥ 2.5× faster than MCP stdio (full pipeline, 1 caller, p50)", fmt.Sprintf("%.2f×", vsMCP), vsMCP >= 2.5)
			recordGoal("warm call ≥ 2.5× faster than MCP stdio (full pipeline, 64 callers, calls/s)", fmt.Sprintf("%.2f×", vsMCPC), vsMCPC >= 2.5)
		}
	}
	doc.Table(gt)
	doc.P("The goals are judged on the full pipeline as the host ships it (SDK plugins on the host "+
		"run with GOMAXPROCS=1, the default this table justifies; the every-core rows show the "+
		"alternative). For scale: "+
		"the in-process call takes %s at p50, %s of the full pipeline's.",
		Dur(Summarize(inproc.seq).P50), DurRatio(Summarize(inproc.seq).P50, fs.P50))
	fmt.Fprintf(os.Stderr, "bench:   p50 full %s, bare %s, stock %s, mcp %s; 64 callers full %s, stock %s, mcp %s\n",
		Dur(fs.P50), Dur(bs.P50), Dur(base.P50), Dur(ms.P50),
		Rate(Median(full.concRates)), Rate(cbaseRate), Rate(mcpRate))
	return nil
}

// discardTracing is tracing whose exporter drops every span: the cost
// measured is Nexus's, not an exporter's.
func discardTracing(ctx context.Context, ratio float64) (*telemetry.Tracing, error) {
	tr, err := telemetry.NewTracing(ctx, telemetry.Options{SampleRatio: ratio, Exporters: []sdktrace.SpanExporter{discard{}}})
	if err != nil {
		return nil, err
	}
	onExit(func() { tr.Shutdown(context.Background()) })
	return tr, nil
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }
