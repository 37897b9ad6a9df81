// Package load holds end-to-end load tests of the host: many concurrent
// calls across several real plugin processes, and cancellation reaching
// the plugin.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/manifest"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	testkit.Main(m, func(b *testkit.Builder) error {
		builder = b
		return nil
	})
}

func newHost(t *testing.T, pkgs ...string) *host.Host {
	t.Helper()
	root := t.TempDir()
	for _, pkg := range pkgs {
		if _, err := builder.PluginDir(root, pkg); err != nil {
			t.Fatal(err)
		}
	}
	h := host.New(host.Options{})
	if diags := h.Discover([]manifest.Root{{Dir: root, Explicit: true}}); diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// Test1000ConcurrentCalls starts 1,000 calls at once across five plugin
// processes (tools, an agent, a task) and requires every one to succeed
// with the right answer.
func Test1000ConcurrentCalls(t *testing.T) {
	t.Parallel()
	h := newHost(t, "plugins/tools/math", "test/testplugins/echo", "plugins/tasks/arith", "plugins/agents/oracle", "test/testplugins/slow")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	calc, err := h.Tools.Get(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	echo, err := h.Tools.Get(ctx, "echo/echo")
	if err != nil {
		t.Fatal(err)
	}
	sleep, err := h.Tools.Get(ctx, "sleep")
	if err != nil {
		t.Fatal(err)
	}
	oracle, err := h.Agents.Get(ctx, "oracle")
	if err != nil {
		t.Fatal(err)
	}
	arith, err := h.Tasks.Get(ctx, "arith")
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"n": 50, "seed": 3}`)
	var insts []component.Instance
	for inst, err := range arith.Instances(ctx, args) {
		if err != nil {
			t.Fatal(err)
		}
		insts = append(insts, inst)
	}

	const n = 1000
	var failed atomic.Int64
	errs := make(chan string, n)
	fail := func(format string, a ...any) {
		failed.Add(1)
		select {
		case errs <- fmt.Sprintf(format, a...):
		default:
		}
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			switch i % 5 {
			case 0:
				out, err := calc.Call(ctx, json.RawMessage(fmt.Sprintf(`{"expression": "%d * 2 + 1"}`, i)))
				if want := fmt.Sprintf(`{"value":%d}`, i*2+1); err != nil || string(out) != want {
					fail("calculator %d: %s, %v", i, out, err)
				}
			case 1:
				out, err := echo.Call(ctx, json.RawMessage(fmt.Sprintf(`{"text": "call %d"}`, i)))
				if want := fmt.Sprintf(`{"text":"call %d"}`, i); err != nil || string(out) != want {
					fail("echo %d: %s, %v", i, out, err)
				}
			case 2:
				out, err := sleep.Call(ctx, json.RawMessage(`{"ms": 20}`))
				if err != nil || string(out) != `{"ms":20}` {
					fail("sleep %d: %s, %v", i, out, err)
				}
			case 3:
				inst := insts[i%len(insts)]
				out, err := oracle.Run(ctx, inst.Data)
				if err != nil {
					fail("oracle %d: %v", i, err)
					return
				}
				res, err := arith.Evaluate(ctx, args, inst, out)
				if err != nil || !res.Passed {
					fail("evaluate %d: %+v, %v", i, res, err)
				}
			case 4:
				out, err := calc.Call(ctx, json.RawMessage(`{"expression": "1 / 0"}`))
				var ce *component.Error
				if !errors.As(err, &ce) {
					fail("calculator 1/0 %d: want a domain error, got %s, %v", i, out, err)
				}
			}
		})
	}
	began := time.Now()
	close(start)
	wg.Wait()
	close(errs)
	t.Logf("%d calls in %v", n, time.Since(began))
	if f := failed.Load(); f > 0 {
		var sample []string
		for e := range errs {
			sample = append(sample, e)
		}
		t.Fatalf("%d of %d calls failed, e.g.:\n%s", f, n, strings.Join(sample[:min(len(sample), 10)], "\n"))
	}
	if r := h.Running(); r != 5 {
		t.Errorf("%d plugin processes, want 5", r)
	}
}

// TestCancellationReachesThePlugin cancels calls blocked in a plugin and
// checks, from the time each plugin handler wrote when its context ended,
// that the cancellation reached it within 100 ms.
func TestCancellationReachesThePlugin(t *testing.T) {
	t.Parallel()
	h := newHost(t, "test/testplugins/slow")
	wait, err := h.Tools.Get(context.Background(), "wait")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Tools.Get(context.Background(), "sleep"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const calls = 20
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	results := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			in, _ := json.Marshal(map[string]string{"path": filepath.Join(dir, strconv.Itoa(i))})
			_, results[i] = wait.Call(ctx, in)
		})
	}
	// Let the calls reach the plugin: an unrelated call through the same
	// connection answering shows the plugin is serving.
	time.Sleep(300 * time.Millisecond)
	cancelled := time.Now()
	cancel()
	wg.Wait()
	returned := time.Since(cancelled)
	t.Logf("all %d calls returned %v after cancel", calls, returned)

	var worst time.Duration
	for i := range calls {
		if !errors.Is(results[i], context.Canceled) {
			t.Errorf("call %d: err = %v, want context.Canceled", i, results[i])
		}
		path := filepath.Join(dir, strconv.Itoa(i))
		var data []byte
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if data, err = os.ReadFile(path); err == nil && len(data) > 0 || time.Now().After(deadline) {
				break
			}
		}
		ns, err := strconv.ParseInt(string(data), 10, 64)
		if err != nil {
			t.Errorf("call %d: the plugin never reported its context ending (%q, %v)", i, data, err)
			continue
		}
		worst = max(worst, time.Unix(0, ns).Sub(cancelled))
	}
	t.Logf("the plugin saw the cancellation at most %v after it", worst)
	if worst > 100*time.Millisecond {
		t.Errorf("cancellation reached the plugin %v after cancel, want within 100ms", worst)
	}
}
