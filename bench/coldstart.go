// This file is section 2: the cold first call. It times exec'ing a
// trivial Go binary and each peer binary's bare start (runtime and package
// init, then exit) as baselines, then a full Nexus cold call (host.New +
// Discover + Tools.Get + Call + Close; unpinned, and pinned on its first
// and on a repeat launch) and the same with its peers: stock go-plugin
// (NewClient + Client + Dispense + Call + Kill, plain and with
// SecureConfig) and MCP stdio (connect + initialize + CallTool + Close),
// interleaved run by run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

var coldStartSection = Section{Key: "cold", Title: "2. Cold first call", Run: runColdStart}

const coldRuns = 60

// phases are the timed steps of one cold call, in order.
type phases []time.Duration

func (p phases) total() time.Duration {
	var t time.Duration
	for _, d := range p {
		t += d
	}
	return t
}

// nexusCold runs one complete cold call through a Nexus host with opts.
func nexusCold(ctx context.Context, root string, opts host.Options) (phases, error) {
	t0 := time.Now()
	h := host.New(opts)
	closeHost := onExit(func() { h.Close() })
	defer closeHost()
	if ds := h.Discover([]manifest.Root{{Dir: root, Explicit: true}}); len(ds) != 0 {
		return nil, fmt.Errorf("discover: %v", ds)
	}
	t1 := time.Now()
	tool, err := h.Tools.Get(ctx, "echo")
	if err != nil {
		return nil, err
	}
	t2 := time.Now()
	out, err := tool.Call(ctx, echoInput)
	if err != nil {
		return nil, err
	}
	t3 := time.Now()
	closeHost()
	t4 := time.Now()
	if string(out) != string(echoInput) {
		return nil, fmt.Errorf("nexus call returned %q, want %q", out, echoInput)
	}
	if n := h.Running(); n != 0 {
		return nil, fmt.Errorf("%d plugin processes still running after Close", n)
	}
	return phases{t1.Sub(t0), t2.Sub(t1), 0, t3.Sub(t2), t4.Sub(t3)}, nil
}

// stockCold runs one complete cold call through plain go-plugin, with
// the client newClient returns.
func stockCold(ctx context.Context, newClient func() *plugin.Client) (phases, error) {
	t0 := time.Now()
	c := newClient()
	kill := onExit(c.Kill)
	defer kill()
	rpc, err := c.Client()
	if err != nil {
		return nil, fmt.Errorf("stock go-plugin: %w", err)
	}
	t1 := time.Now()
	tool, err := dispenseStock(rpc)
	if err != nil {
		return nil, err
	}
	t2 := time.Now()
	if err := stockCall(ctx, tool); err != nil {
		return nil, err
	}
	t3 := time.Now()
	kill()
	t4 := time.Now()
	if !c.Exited() {
		return nil, fmt.Errorf("stock plugin still running after Kill")
	}
	return phases{0, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3)}, nil
}

func runColdStart(env *Env, doc *Doc) error {
	ctx := context.Background()
	echoBin, err := env.Binary(echoPkg)
	if err != nil {
		return err
	}
	nopBin, err := env.Binary("bench/nop")
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
	root, err := env.PluginRoot("cold", echoPkg)
	if err != nil {
		return err
	}
	stockSum, err := fileSHA256(stockBin)
	if err != nil {
		return err
	}
	// One tracing and metrics for every full-pipeline host, as a host
	// process would have: a cold call does not make them.
	full, err := fullPipeline(ctx, 0)
	if err != nil {
		return err
	}
	pinned, err := newPinnedEcho(echoBin)
	if err != nil {
		return err
	}
	repeatRoot, err := env.Dir("cold-pinned")
	if err != nil {
		return err
	}
	if err := pinned.root(repeatRoot); err != nil {
		return err
	}
	firstRoots := 0
	pinnedFirst := func() (phases, error) {
		// A new copy of the binary: a file version this process has not
		// verified, so the launch hashes it.
		firstRoots++
		dir, err := env.Dir(fmt.Sprintf("cold-pinned-first-%d", firstRoots))
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		if err := pinned.root(dir); err != nil {
			return nil, err
		}
		return nexusCold(ctx, dir, full)
	}
	inprocFirst, err := inprocCold()
	if err != nil {
		return err
	}

	type variant struct {
		name string
		run  func() (phases, error)
		bare *variant // the bare start of the same binary
		got  []phases
	}
	exec := func(wantCode int, bin string, args ...string) func() (phases, error) {
		return func() (phases, error) {
			d, err := timeRun(command(bin, args...))
			if ee, ok := errors.AsType[*osexec.ExitError](err); ok && ee.ExitCode() == wantCode {
				err = nil
			}
			return phases{d}, err
		}
	}
	nop := &variant{name: "exec a trivial Go binary (`func main() {}`)", run: exec(0, nopBin)}
	echoBare := &variant{name: "**bare start**: echo plugin `" + sdk.ManifestFlag + "` (prints, exits)", run: exec(0, echoBin, sdk.ManifestFlag)}
	// Without go-plugin's cookie, Serve says it is a plugin and exits 1.
	stockBare := &variant{name: "bare start: stockecho without the handshake cookie (exits 1)", run: exec(1, stockBin)}
	mcpBare := &variant{name: "bare start: mcpecho `" + mcpBareFlag + "` (exits after init)", run: exec(0, mcpBin, mcpBareFlag)}
	stock := &variant{name: "stock go-plugin: NewClient + Client + Dispense + Call + Kill", bare: stockBare,
		run: func() (phases, error) {
			return stockCold(ctx, func() *plugin.Client { return newStockClient(stockBin) })
		}}
	stockSecure := &variant{name: "stock go-plugin + SecureConfig (sha256, hashed every launch)", bare: stockBare,
		run: func() (phases, error) {
			return stockCold(ctx, func() *plugin.Client { return newSecureStockClient(stockBin, stockSum) })
		}}
	mcpCall := &variant{name: "MCP stdio: Connect (start + initialize) + CallTool + Close", bare: mcpBare,
		run: func() (phases, error) { return mcpCold(ctx, mcpBin) }}
	nexus := &variant{name: "**Nexus**: host.New + Discover + Tools.Get + Call + Close (default host: validation)", bare: echoBare,
		run: func() (phases, error) { return nexusCold(ctx, root, host.Options{}) }}
	nexusFull := &variant{name: "**Nexus, full pipeline** (validation + tracing sampled + metrics)", bare: echoBare,
		run: func() (phases, error) { return nexusCold(ctx, root, full) }}
	nexusFirst := &variant{name: "Nexus, full pipeline, **pinned**: first launch of the file in this process (hashes it)", bare: echoBare,
		run: pinnedFirst}
	nexusRepeat := &variant{name: "Nexus, full pipeline, **pinned**: repeat launch (digest cached: fstat only)", bare: echoBare,
		run: func() (phases, error) { return nexusCold(ctx, repeatRoot, full) }}
	echoBare.bare, stockBare.bare, mcpBare.bare = echoBare, stockBare, mcpBare
	vs := []*variant{nop, echoBare, stockBare, mcpBare, stock, stockSecure, mcpCall, nexus, nexusFull, nexusFirst, nexusRepeat}
	for _, v := range vs { // warm-up: page cache, first-use costs, the repeat root's digest
		if _, err := v.run(); err != nil {
			return err
		}
	}
	var hashes []time.Duration
	for i := range coldRuns {
		for j := range vs {
			v := vs[(i+j)%len(vs)] // rotate, so no variant always runs first
			p, err := v.run()
			if err != nil {
				return err
			}
			v.got = append(v.got, p)
		}
		if i%10 == 0 {
			t0 := time.Now()
			if _, err := fileSHA256(echoBin); err != nil {
				return err
			}
			hashes = append(hashes, time.Since(t0))
		}
	}
	totals := func(v *variant) Summary {
		var ds []time.Duration
		for _, p := range v.got {
			ds = append(ds, p.total())
		}
		return Summarize(ds)
	}

	doc.P("Every peer's cold call starts from nothing and ends with no process left. A binary's "+
		"**bare start** is the least a process of it costs: exec until exit, doing the runtime "+
		"and package init (the echo plugin links the SDK, go-plugin and grpc; it prints its "+
		"manifest for `%s`). Each cold call is divided by the bare start of its own binary. The "+
		"Nexus host discovers the plugin dir, looks the tool up (launch, handshake, `Describe` "+
		"checked against the manifest), calls `{\"text\":\"hello\"}` once and closes. A **pinned** "+
		"plugin's manifest sets `sha256`: the launcher opens the binary, verifies that descriptor "+
		"and executes it; it hashes a file version (device, inode, size, mtime, ctime) only the "+
		"first time this process launches it, so the first-launch row copies the binary to a new "+
		"file before each run, and the repeat row launches one file again and again. Stock "+
		"go-plugin does the same call with `bench/stockecho` (no manifest, no Describe); with "+
		"`SecureConfig{Checksum, Hash: sha256.New()}` it hashes the whole binary on every launch. "+
		"MCP stdio starts `bench/mcpecho` with `mcp.CommandTransport`, initializes the session, "+
		"calls the tool and closes (stdin closed, server reaped). %d runs each, variants "+
		"interleaved.", sdk.ManifestFlag, coldRuns)
	t := NewTable("what", "p50", "p99", "min", "p50 ÷ bare start", "p99 ÷ bare start")
	t.Row("in-process: first call of the Go function in this process (1 sample)", Dur(inprocFirst), "—", "—", "—", "—")
	for _, v := range vs {
		s := totals(v)
		r50, r99 := "—", "—"
		if v.bare != nil {
			b := totals(v.bare)
			r50, r99 = DurRatio(s.P50, b.P50), DurRatio(s.P99, b.P99)
		}
		t.Row(v.name, Dur(s.P50), Dur(s.P99), Dur(s.Min), r50, r99)
	}
	doc.Table(t)
	doc.P("Binary sizes: echo plugin %s, stockecho %s, mcpecho %s, trivial %s. Hashing the echo "+
		"binary (sha256, from the page cache) takes %s (median of %d): what a launch that hashes "+
		"pays on top.", fileSize(echoBin), fileSize(stockBin), fileSize(mcpBin), fileSize(nopBin),
		Dur(Median(hashes)), len(hashes))

	ns, fs, ss := totals(nexus), totals(nexusFull), totals(stock)
	pf, pr, sc, eb := totals(nexusFirst), totals(nexusRepeat), totals(stockSecure), totals(echoBare)
	doc.P("Nexus ÷ stock go-plugin: **%s** at p50, %s at p99 (full pipeline: %s at p50). Pinned "+
		"Nexus, repeat launch ÷ stock go-plugin + SecureConfig: **%s** at p50; first launch: %s.",
		DurRatio(ns.P50, ss.P50), DurRatio(ns.P99, ss.P99), DurRatio(fs.P50, ss.P50),
		DurRatio(pr.P50, sc.P50), DurRatio(pf.P50, sc.P50))
	doc.H3("Peer goal")
	gt := NewTable("goal", "launch", "p50 ÷ bare start", "").AlignLeft()
	for _, g := range []struct {
		what string
		s    Summary
	}{{"repeat launch, digest cached", pr}, {"first launch in this process, hashes", pf}} {
		r := float64(g.s.P50) / float64(eb.P50)
		gt.Row("pinned cold start ≤ 1.5× the bare start of the binary", g.what, fmt.Sprintf("%.2f×", r), PassFail(r <= 1.5))
		recordGoal("pinned cold start ≤ 1.5× the bare start of the binary ("+g.what+"; p50)", fmt.Sprintf("%.2f×", r), r <= 1.5)
	}
	doc.Table(gt)
	fmt.Fprintf(os.Stderr, "bench:   bare %s, stock %s, mcp %s, nexus %s, pinned first %s, repeat %s (p50)\n",
		Dur(eb.P50), Dur(ss.P50), Dur(totals(mcpCall).P50), Dur(ns.P50), Dur(pf.P50), Dur(pr.P50))

	doc.H3("Where the cold call's time goes (p50 of each step)")
	steps := []string{"discover (host.New + Discover)", "launch + handshake (+ Describe for Nexus, initialize for MCP)", "dispense", "first call", "close / kill (process reaped)"}
	cols := []*variant{nexus, nexusFull, nexusFirst, nexusRepeat, stock, stockSecure, mcpCall}
	pt := NewTable("step", "Nexus", "Nexus, full", "pinned, first", "pinned, repeat", "stock go-plugin", "stock + SecureConfig", "MCP stdio")
	for k, name := range steps {
		row := []any{name}
		for _, v := range cols {
			var ds []time.Duration
			for _, p := range v.got {
				ds = append(ds, p[k])
			}
			s := Summarize(ds)
			if s.Max == 0 {
				row = append(row, "—")
			} else {
				row = append(row, Dur(s.P50))
			}
		}
		pt.Row(row...)
	}
	row := []any{"total (p50 of sums)"}
	for _, v := range cols {
		row = append(row, Dur(totals(v).P50))
	}
	pt.Row(row...)
	doc.Table(pt)
	doc.P("Nexus's `Describe` is the first RPC on its connection, so its first tool call runs on " +
		"a warmed-up connection; stock go-plugin's first call pays for that first RPC itself " +
		"(MCP's `initialize` likewise warms its pipe). Compare launch + first call together.")
	return nil
}

func fileSize(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return MB(uint64(fi.Size()))
}
