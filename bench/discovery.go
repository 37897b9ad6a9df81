// This file is section 1: discovery of 1,000 and 10,000 generated
// manifests, from scan start to a ready registry, against the floor of
// just reading the same files, with allocations, peak RSS in a fresh
// process, and proof that no plugin process starts.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

var discoverySection = Section{Key: "discovery", Title: "1. Discovery", Run: runDiscovery}

// Targets from the issue, for 10,000 manifests.
const (
	discoveryTargetTime = 100 * time.Millisecond
	discoveryTargetRSS  = 50e6 // bytes
	discoveryTargetN    = 10000
)

// discoveryManifest is a realistic small manifest: one plugin, two tools
// with small object schemas. %[1]s is the plugin name, %[2]s a name
// prefix for its tools.
const discoveryManifest = `schema = 1

[plugin]
name = "%[1]s"
version = "1.4.2"
description = "Arithmetic tools for agents (%[1]s)."
binary = "calc"
protocols = [1]

[[tool]]
name = "%[2]s_add"
description = "Adds two numbers."
tags = ["math"]
input_schema = '''
{
  "type": "object",
  "properties": {
    "a": {"type": "number", "description": "first addend"},
    "b": {"type": "number", "description": "second addend"}
  },
  "required": ["a", "b"]
}'''
output_schema = '''
{"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]}'''

[[tool]]
name = "%[2]s_sqrt"
description = "Square root of a non-negative number."
kind = "runtime"
task = "optional"
input_schema = '{"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}, "required": ["x"]}'
output_schema = '{"type": "object", "properties": {"root": {"type": "number"}}}'
`

// writeManifests lays out n plugin directories under dir; every other one
// also holds its (fake) binary, which discovery must not look at. File
// creation is syscall-bound, so a few goroutines share the work.
func writeManifests(dir string, n int) error {
	var next atomic.Int64
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for w := range errs {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n && errs[w] == nil; i = int(next.Add(1) - 1) {
				errs[w] = writeManifest(dir, i)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func writeManifest(dir string, i int) error {
	name := fmt.Sprintf("calc-%05d", i)
	pdir := filepath.Join(dir, name)
	if err := os.Mkdir(pdir, 0o755); err != nil {
		return err
	}
	body := fmt.Sprintf(discoveryManifest, name, fmt.Sprintf("calc%05d", i))
	if err := os.WriteFile(filepath.Join(pdir, manifest.FileName), []byte(body), 0o644); err != nil {
		return err
	}
	if i%2 == 0 {
		return os.WriteFile(filepath.Join(pdir, "calc"), []byte("#!/bin/sh\nexit 1\n"), 0o755)
	}
	return nil
}

// discover is the measured operation: a new host and one scan of root.
func discover(root string) (*host.Host, manifest.Diagnostics) {
	h := host.New(host.Options{})
	return h, h.Discover([]manifest.Root{{Dir: root, Explicit: true}})
}

// checkDiscovered fails unless h holds n plugins with two tools each, the
// scan was clean, and no plugin process is running.
func checkDiscovered(h *host.Host, ds manifest.Diagnostics, n int) error {
	switch {
	case len(ds) != 0:
		return fmt.Errorf("discovery reported %d diagnostics, first: %v", len(ds), ds[0])
	case len(h.Manifests()) != n:
		return fmt.Errorf("discovered %d plugins, want %d", len(h.Manifests()), n)
	case len(h.Tools.List()) != 2*n:
		return fmt.Errorf("registered %d tools, want %d", len(h.Tools.List()), 2*n)
	case h.Running() != 0:
		return fmt.Errorf("discovery started %d plugin processes, want 0", h.Running())
	}
	return nil
}

// readAll is the floor: list the plugin dirs and read every manifest, on
// as many goroutines as manifest.Scan uses, without parsing anything.
func readAll(root string) (int64, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, err
	}
	var total atomic.Int64
	var next atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(entries); i = int(next.Add(1) - 1) {
				b, err := os.ReadFile(filepath.Join(root, entries[i].Name(), manifest.FileName))
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				total.Add(int64(len(b)))
			}
		})
	}
	wg.Wait()
	return total.Load(), firstErr
}

type discoveryRun struct {
	floor, scan, full time.Duration
	mallocs, bytes    uint64
	retained          uint64
	running           int
}

func measureDiscovery(root string, n int) (discoveryRun, error) {
	var r discoveryRun
	runtime.GC()
	t0 := time.Now()
	if _, err := readAll(root); err != nil {
		return r, err
	}
	r.floor = time.Since(t0)

	runtime.GC()
	t0 = time.Now()
	ms, ds := manifest.Scan([]manifest.Root{{Dir: root, Explicit: true}})
	r.scan = time.Since(t0)
	if len(ms) != n || len(ds) != 0 {
		return r, fmt.Errorf("manifest.Scan: %d manifests (want %d), %d diagnostics", len(ms), n, len(ds))
	}
	ms = nil

	runtime.GC()
	var before, after, live runtime.MemStats
	runtime.ReadMemStats(&before)
	t0 = time.Now()
	h, ds := discover(root)
	r.full = time.Since(t0)
	runtime.ReadMemStats(&after)
	if err := checkDiscovered(h, ds, n); err != nil {
		h.Close()
		return r, err
	}
	r.running = h.Running()
	runtime.GC()
	runtime.ReadMemStats(&live)
	runtime.KeepAlive(h)
	r.mallocs = after.Mallocs - before.Mallocs
	r.bytes = after.TotalAlloc - before.TotalAlloc
	if live.HeapAlloc > before.HeapAlloc {
		r.retained = live.HeapAlloc - before.HeapAlloc
	}
	return r, h.Close()
}

// freshDiscovery discovers root in a new process and returns the time the
// child measured and its peak RSS.
func freshDiscovery(root string, n int) (time.Duration, uint64, error) {
	out, rss, err := runChildRSS("discover", root, fmt.Sprint(n))
	if err != nil {
		return 0, 0, err
	}
	var res childResult
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, 0, fmt.Errorf("child output %q: %v", out, err)
	}
	if res.Running != 0 || res.Tools != 2*n {
		return 0, 0, fmt.Errorf("child: %d tools, %d running", res.Tools, res.Running)
	}
	return res.Elapsed, rss, nil
}

func runDiscovery(env *Env, doc *Doc) error {
	doc.P("Discovery scans plugin roots, parses and validates every `nexus.toml`, and fills the " +
		"registries with lazy entries; it must start no process. Each generated manifest declares " +
		"one plugin with two tools with small object schemas; every other plugin dir also holds its " +
		"binary. Time runs from scan start to a ready registry (`host.New` + `h.Discover`), median " +
		"of several in-process runs, plus one discovery in a fresh process (cold heap, warm page " +
		"cache). The floor is listing the dirs and reading every manifest with the same " +
		"parallelism, parsing nothing; `manifest.Scan` is parsing and validation without the " +
		"registry. Peak RSS is the child's `ru_maxrss`; the idle child is this same binary " +
		"doing nothing.")

	const freshRuns = 3
	var idle []uint64
	for range freshRuns {
		_, rss, err := runChildRSS("idle")
		if err != nil {
			return err
		}
		idle = append(idle, rss)
	}
	idleRSS := Median(idle)

	timeT := NewTable("manifests", "read files (floor)", "manifest.Scan", "host.New + Discover (median)",
		"min – max", "fresh process", "÷ floor", "÷ Scan", "plugin processes started",
		fmt.Sprintf("target ≤ %s", Dur(discoveryTargetTime)))
	memT := NewTable("manifests", "allocations", "bytes allocated", "heap retained",
		"peak RSS (fresh process)", "idle process RSS", "RSS − idle", "÷ idle",
		fmt.Sprintf("target ≤ %s", MB(discoveryTargetRSS)))

	for _, n := range []int{1000, 10000} {
		root, err := env.Dir(fmt.Sprintf("discovery-%d", n))
		if err != nil {
			return err
		}
		if err := writeManifests(root, n); err != nil {
			return err
		}
		runs := 9
		if n >= 10000 {
			runs = 5
		}
		if _, err := measureDiscovery(root, n); err != nil { // warm-up
			return err
		}
		var floor, scan, full []time.Duration
		var mallocs, bytes, retained []uint64
		started := 0
		for range runs {
			r, err := measureDiscovery(root, n)
			if err != nil {
				return err
			}
			floor, scan, full = append(floor, r.floor), append(scan, r.scan), append(full, r.full)
			mallocs, bytes, retained = append(mallocs, r.mallocs), append(bytes, r.bytes), append(retained, r.retained)
			started = max(started, r.running)
		}
		var freshT []time.Duration
		var freshRSS []uint64
		for range freshRuns {
			d, rss, err := freshDiscovery(root, n)
			if err != nil {
				return err
			}
			freshT, freshRSS = append(freshT, d), append(freshRSS, rss)
		}
		fs, ss, xs := Summarize(floor), Summarize(scan), Summarize(full)
		fresh, rss := Median(freshT), Median(freshRSS)

		target, memTarget := "—", "—"
		if n == discoveryTargetN {
			target = fmt.Sprintf("median %s, fresh %s", PassFail(xs.P50 <= discoveryTargetTime), PassFail(fresh <= discoveryTargetTime))
			memTarget = PassFail(rss <= discoveryTargetRSS)
		}
		timeT.Row(Count(uint64(n)), Dur(fs.P50), Dur(ss.P50), Dur(xs.P50),
			Dur(xs.Min)+" – "+Dur(xs.Max), Dur(fresh), DurRatio(xs.P50, fs.P50), DurRatio(xs.P50, ss.P50),
			started, target)
		memT.Row(Count(uint64(n)), Count(Median(mallocs)), MB(Median(bytes)), MB(Median(retained)),
			MB(rss), MB(idleRSS), MB(rss-min(rss, idleRSS)), Ratio(float64(rss), float64(idleRSS)), memTarget)
		if n == discoveryTargetN {
			hostRSS10k.ok, hostRSS10k.rss, hostRSS10k.idle = true, rss, idleRSS
		}
		fmt.Fprintf(os.Stderr, "bench:   %d manifests: %s median, %s fresh, peak RSS %s\n", n, Dur(xs.P50), Dur(fresh), MB(rss))
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	doc.H3("Time")
	doc.Table(timeT)
	doc.H3("Memory")
	doc.Table(memT)
	doc.P("Allocations and bytes are `runtime.MemStats` deltas over one in-process discovery " +
		"(median); heap retained is what the ready registry keeps live after a GC. The memory " +
		"target is judged on the whole process's peak RSS, idle runtime included.")
	return discoveryVersusExec(env, doc)
}

// discoveryVersusExec compares discovery from manifests with what Packer
// and Kong do: execute every plugin binary and ask it what it provides.
func discoveryVersusExec(env *Env, doc *Doc) error {
	echoBin, err := env.Binary(echoPkg)
	if err != nil {
		return err
	}
	t := NewTable("plugins", "host.New + Discover (median)", "exec every binary + parse", "exec runs",
		"exec, per plugin", "exec ÷ manifests", "processes started: manifests / exec")
	perPlugin := 0
	for _, n := range []int{100, 1000} {
		root, err := env.Dir(fmt.Sprintf("discovery-exec-%d", n))
		if err != nil {
			return err
		}
		if err := echoFleet(root, echoBin, n); err != nil {
			return err
		}
		var manifests []time.Duration
		components, started := 0, 0
		for i := range 8 { // the first is a warm-up
			runtime.GC()
			t0 := time.Now()
			h, ds := discover(root)
			d := time.Since(t0)
			components = len(h.Tools.List()) + len(h.Agents.List()) + len(h.Tasks.List())
			started = max(started, h.Running())
			nm := len(h.Manifests())
			if err := h.Close(); err != nil {
				return err
			}
			if len(ds) != 0 || nm != n {
				return fmt.Errorf("discover %d echo plugins: %d manifests, %d diagnostics (first: %v)", n, nm, len(ds), ds)
			}
			if i > 0 {
				manifests = append(manifests, d)
			}
		}
		// Exec is slow at 1,000 (that is the point): once there, a
		// warm-up and three runs at 100.
		runs := 3
		if n >= 1000 {
			runs = 1
		} else if _, err := askEveryBinary(root); err != nil {
			return err
		}
		var execs []time.Duration
		for range runs {
			t0 := time.Now()
			got, err := askEveryBinary(root)
			if err != nil {
				return err
			}
			execs = append(execs, time.Since(t0))
			if got != components {
				return fmt.Errorf("asking %d binaries found %d components, discovery %d", n, got, components)
			}
		}
		perPlugin = components / n
		m, e := Median(manifests), Median(execs)
		t.Row(Count(uint64(n)), Dur(m), Dur(e), runs, Dur(e/time.Duration(n)), DurRatio(e, m),
			fmt.Sprintf("%d / %s", started, Count(uint64(n*runs))))
		fmt.Fprintf(os.Stderr, "bench:   %d plugins: manifests %s, exec every binary %s\n", n, Dur(m), Dur(e))
		if err := os.RemoveAll(root); err != nil {
			return err
		}
	}
	doc.H3("Manifests versus asking every binary")
	doc.P("What Packer and Kong do instead of reading manifests: execute every plugin binary to "+
		"ask what it provides, here the echo test plugin run with `%s` (it prints its manifest), "+
		"%d at a time (NumCPU), and parse and validate each answer with `manifest.Parse`; the "+
		"registry is not even filled. Both read the same tree: N plugin dirs, each holding the "+
		"echo plugin's manifest under names of its own (%d components each) and a hard link to "+
		"the one echo binary, so every exec finds the binary in the page cache: the cheapest "+
		"case for asking, since N distinct binaries would each be read and mapped. Manifests: "+
		"median of 7 runs after a warm-up.", sdk.ManifestFlag, runtime.NumCPU(), perPlugin)
	doc.Table(t)
	return nil
}
