package hostile

import (
	"runtime"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/manifest"
)

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// assertHeapGrowth fails when the live heap grew by more than limit since
// before. Parallel tests share the heap, so limits are generous: they catch
// unbounded growth (a plugin's whole output, a whole huge file), not bytes.
func assertHeapGrowth(t *testing.T, before uint64, limit uint64) {
	t.Helper()
	after := heapInUse()
	grew := int64(after) - int64(before)
	t.Logf("live heap %d MiB -> %d MiB", before>>20, after>>20)
	if grew > int64(limit) {
		t.Errorf("live heap grew by %d MiB, limit %d MiB", grew>>20, limit>>20)
	}
}

// newHost discovers roots with a warn-level logger that discards, like the
// CLI's default, and closes the host at the end of the test.
func newHost(t *testing.T, root string, opts ...func(*host.Options)) (*host.Host, manifest.Diagnostics) {
	t.Helper()
	o := host.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: discard{}, Level: hclog.Warn})}
	for _, f := range opts {
		f(&o)
	}
	h := host.New(o)
	t.Cleanup(func() { h.Close() })
	return h, h.Discover([]manifest.Root{{Dir: root, Explicit: true}})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// short keeps logged errors readable.
func short(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	return strings.TrimSpace(s)
}
