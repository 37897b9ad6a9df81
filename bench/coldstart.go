// This file is section 2: the cold first call. It times exec'ing a
// trivial Go binary and the echo plugin's bare start (it prints its
// manifest and exits) as baselines, then a full Nexus cold call (host.New
// + Discover + Tools.Get + Call + Close) and the same with stock go-plugin
// (NewClient + Client + Dispense + Call + Kill), interleaved run by run.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"time"

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

// nexusCold runs one complete cold call through the Nexus host.
func nexusCold(ctx context.Context, root string) (phases, error) {
	t0 := time.Now()
	h := host.New(host.Options{})
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

// stockCold runs one complete cold call through plain go-plugin.
func stockCold(ctx context.Context, bin string) (phases, error) {
	t0 := time.Now()
	c := newStockClient(bin)
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
	const echoPkg = "test/testplugins/echo"
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
	root, err := env.PluginRoot("cold", echoPkg)
	if err != nil {
		return err
	}

	type variant struct {
		name string
		run  func() (phases, error)
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
	vs := []*variant{
		{name: "exec a trivial Go binary (`func main() {}`)", run: exec(0, nopBin)},
		{name: "**bare start**: echo plugin `" + sdk.ManifestFlag + "` (prints, exits)", run: exec(0, echoBin, sdk.ManifestFlag)},
		{name: "stock go-plugin: NewClient + Client + Dispense + Call + Kill", run: func() (phases, error) { return stockCold(ctx, stockBin) }},
		{name: "**Nexus**: host.New + Discover + Tools.Get + Call + Close", run: func() (phases, error) { return nexusCold(ctx, root) }},
		// Without go-plugin's cookie, Serve says it is a plugin and exits 1.
		{name: "stockecho started without the handshake cookie (exits 1)", run: exec(1, stockBin)},
	}
	const bare, stock, nexus = 1, 2, 3
	for _, v := range vs { // warm-up: page cache, first-use costs
		if _, err := v.run(); err != nil {
			return err
		}
	}
	for i := range coldRuns {
		for j := range vs {
			v := vs[(i+j)%len(vs)] // rotate, so no variant always runs first
			p, err := v.run()
			if err != nil {
				return err
			}
			v.got = append(v.got, p)
		}
	}
	totals := func(v *variant) Summary {
		var ds []time.Duration
		for _, p := range v.got {
			ds = append(ds, p.total())
		}
		return Summarize(ds)
	}
	base := totals(vs[bare])

	doc.P("The echo test plugin (`test/testplugins/echo`, built with `go build`) links the SDK, "+
		"go-plugin and grpc. Its **bare start** (`%s`: the runtime and package init, then print "+
		"the manifest and exit) is the baseline: the least a process of that binary costs. A "+
		"cold call starts from nothing and ends with no process left: the Nexus host discovers "+
		"the plugin dir, looks the tool up (launch, handshake, `Describe` checked against the "+
		"manifest), calls `{\"text\":\"hello\"}` once and closes; stock go-plugin does the same "+
		"with `bench/stockecho` (no manifest, no Describe). %d runs each, variants interleaved.",
		sdk.ManifestFlag, coldRuns)
	t := NewTable("what", "p50", "p99", "min", "p50 ÷ bare start", "p99 ÷ bare start")
	for _, v := range vs {
		s := totals(v)
		t.Row(v.name, Dur(s.P50), Dur(s.P99), Dur(s.Min), DurRatio(s.P50, base.P50), DurRatio(s.P99, base.P99))
	}
	doc.Table(t)
	doc.P("Binary sizes: echo plugin %s, stockecho %s, trivial %s.", fileSize(echoBin), fileSize(stockBin), fileSize(nopBin))
	ns, ss := totals(vs[nexus]), totals(vs[stock])
	doc.P("Nexus ÷ stock go-plugin: **%s** at p50, %s at p99.", DurRatio(ns.P50, ss.P50), DurRatio(ns.P99, ss.P99))
	fmt.Fprintf(os.Stderr, "bench:   bare %s, stock %s, nexus %s (p50)\n", Dur(base.P50), Dur(ss.P50), Dur(ns.P50))

	doc.H3("Where the cold call's time goes (p50 of each step)")
	steps := []string{"discover (host.New + Discover)", "launch + handshake (+ Describe for Nexus)", "dispense", "first call", "close / kill (process reaped)"}
	pt := NewTable("step", "Nexus", "stock go-plugin")
	for k, name := range steps {
		col := func(v *variant) string {
			var ds []time.Duration
			for _, p := range v.got {
				ds = append(ds, p[k])
			}
			s := Summarize(ds)
			if s.Max == 0 {
				return "—"
			}
			return Dur(s.P50)
		}
		pt.Row(name, col(vs[nexus]), col(vs[stock]))
	}
	pt.Row("total (p50 of sums)", Dur(ns.P50), Dur(ss.P50))
	doc.Table(pt)
	doc.P("Nexus's `Describe` is the first RPC on its connection, so its first tool call runs on " +
		"a warmed-up connection; stock go-plugin's first call pays for that first RPC itself. " +
		"Compare launch + first call together.")
	return nil
}

func fileSize(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return MB(uint64(fi.Size()))
}
