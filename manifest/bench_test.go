package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// benchManifest is a realistic small manifest: one plugin, two tools with
// small object schemas.
const benchManifest = `schema = 1

[plugin]
name = "calc-%[1]d"
version = "1.4.2"
description = "Arithmetic tools for agents."
binary = "calc"
protocols = [1]

[[tool]]
name = "add"
description = "Adds two numbers."
input_schema = '''
{
  "type": "object",
  "properties": {
    "a": {"type": "number"},
    "b": {"type": "number"}
  },
  "required": ["a", "b"]
}'''
output_schema = '''
{"type": "object", "properties": {"sum": {"type": "number"}}}'''

[[tool]]
name = "sqrt"
description = "Square root."
kind = "runtime"
task = "optional"
input_schema = '{"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}}'
output_schema = '{"type": "object", "properties": {"root": {"type": "number"}}}'
`

// writeBenchTree writes n plugin directories under dir.
func writeBenchTree(tb testing.TB, dir string, n int) {
	tb.Helper()
	for i := range n {
		pdir := filepath.Join(dir, fmt.Sprintf("calc-%05d", i))
		if err := os.Mkdir(pdir, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pdir, FileName), fmt.Appendf(nil, benchManifest, i), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	tmp := b.TempDir()
	for _, n := range []int{1000, 10000} {
		// Built once: the sub-benchmark body runs several times.
		dir := filepath.Join(tmp, fmt.Sprint(n))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		writeBenchTree(b, dir, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			roots := []Root{{Dir: dir, Explicit: true}}
			b.ReportAllocs()
			start := cpuTime(b)
			for b.Loop() {
				ms, ds := Scan(roots)
				if len(ms) != n || len(ds) != 0 {
					b.Fatalf("Scan: %d manifests, diagnostics %v", len(ms), ds)
				}
			}
			// CPU time says more than wall time on a shared machine; with
			// GOMAXPROCS workers, wall time is about cpu-ns/op / GOMAXPROCS.
			b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkParse(b *testing.B) {
	data := fmt.Appendf(nil, benchManifest, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, ds := Parse("nexus.toml", data); len(ds) != 0 {
			b.Fatal(ds)
		}
	}
}
