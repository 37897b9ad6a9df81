package hostile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/manifest"
)

// pluginRoot lays out the given plugin packages in a fresh root.
func pluginRoot(t *testing.T, pkgs ...string) string { return builder.Root(t, pkgs...) }

func callTool(ctx context.Context, h *host.Host, name, input string) (json.RawMessage, error) {
	tool, err := h.Tools.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return tool.Call(ctx, json.RawMessage(input))
}

// TestFloodingPluginIsContained: a plugin writes to stdout and stderr
// without end (long lines, and one endless line); the host keeps serving
// its other calls promptly and keeps only a bounded tail of the output.
func TestFloodingPluginIsContained(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginRoot(t, "test/testplugins/flood"))
	ctx := context.Background()
	if _, err := callTool(ctx, h, "ping", `{}`); err != nil {
		t.Fatal(err)
	}
	before := heapInUse()
	if _, err := callTool(ctx, h, "flood", `{}`); err != nil {
		t.Fatal(err)
	}
	// Keep calling while the flood goes on for two seconds.
	var slowest time.Duration
	calls := 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); calls++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		start := time.Now()
		_, err := callTool(cctx, h, "ping", `{}`)
		cancel()
		if err != nil {
			t.Fatalf("ping %d during the flood: %v", calls, err)
		}
		slowest = max(slowest, time.Since(start))
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("%d pings during the flood, slowest %v", calls, slowest)
	assertHeapGrowth(t, before, 64<<20)
}

// TestStalledCallReturnsAtItsDeadline: a tool that never answers and
// ignores its context; the caller's deadline still ends the call, the
// plugin keeps serving, and Close does not wait for the stalled call.
func TestStalledCallReturnsAtItsDeadline(t *testing.T) {
	t.Parallel()
	h, _ := newHost(t, pluginRoot(t, "test/testplugins/slow"))
	if _, err := callTool(context.Background(), h, "sleep", `{"ms": 0}`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := callTool(ctx, h, "stall", `{}`)
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if took > 3*time.Second {
		t.Errorf("stalled call returned after %v, deadline 300ms", took)
	}
	if _, err := callTool(context.Background(), h, "sleep", `{"ms": 1}`); err != nil {
		t.Errorf("plugin unusable after a stalled call: %v", err)
	}

	// A stalled call without any deadline ends when the host closes.
	done := make(chan error, 1)
	go func() {
		_, err := callTool(context.Background(), h, "stall", `{}`)
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Error("stalled call succeeded after Close")
		} else {
			t.Logf("stalled call after Close: %v", short(err.Error()))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled call still blocks 5s after Close")
	}
}

// manyDir lays out the many plugin with the manifest it prints for n tools
// (or its committed 3-tool manifest when n is 0).
func manyDir(t *testing.T, n int) string {
	t.Helper()
	root := pluginRoot(t, "test/testplugins/many")
	if n == 0 {
		return root
	}
	bin := filepath.Join(root, "many", "many")
	cmd := exec.Command(bin, "--nexus-manifest")
	cmd.Env = []string{fmt.Sprintf("NEXUS_TEST_MANY=%d", n)}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("many --nexus-manifest: %v", err)
	}
	write(t, filepath.Join(root, "many", manifest.FileName), out, 0o644)
	return root
}

// TestDescribeWithThousandsOfComponents: a binary that answers Describe
// with thousands of components is either served (when its manifest
// declares them all) or refused with a bounded, clear error.
func TestDescribeWithThousandsOfComponents(t *testing.T) {
	t.Parallel()
	t.Run("declared: served", func(t *testing.T) {
		t.Parallel()
		const n = 2000
		root := manyDir(t, n)
		before := heapInUse()
		h, diags := newHost(t, root, func(o *host.Options) { o.PluginEnv = []string{fmt.Sprintf("NEXUS_TEST_MANY=%d", n)} })
		if diags.HasErrors() {
			t.Fatal(diags.Err())
		}
		if got := len(h.Tools.List()); got != n {
			t.Fatalf("%d tools, want %d", got, n)
		}
		for _, name := range []string{"t00000", "t01999"} {
			if _, err := callTool(context.Background(), h, name, `{}`); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		assertHeapGrowth(t, before, 96<<20)
	})
	t.Run("undeclared: refused", func(t *testing.T) {
		t.Parallel()
		const n = 5000
		h, _ := newHost(t, manyDir(t, 0), func(o *host.Options) { o.PluginEnv = []string{fmt.Sprintf("NEXUS_TEST_MANY=%d", n)} })
		before := heapInUse()
		_, err := callTool(context.Background(), h, "t00000", `{}`)
		if !errors.Is(err, component.ErrLaunch) {
			t.Fatalf("err = %v, want ErrLaunch", err)
		}
		msg := err.Error()
		t.Logf("error of %d bytes, %d lines: %s", len(msg), strings.Count(msg, "\n"), short(msg))
		for _, w := range []string{"does not serve what", `+ tool "t00003": served by the binary, not declared in the manifest`, "nexus-host plugins manifest"} {
			if !strings.Contains(msg, w) {
				t.Errorf("error does not mention %q", w)
			}
		}
		// One line per undeclared component would make a 400 KB error.
		if len(msg) > 64<<10 {
			t.Errorf("error is %d bytes, %d lines long: the difference must be summarized (first lines, then a count)", len(msg), strings.Count(msg, "\n"))
		}
		if n := h.Running(); n != 0 {
			t.Errorf("%d processes left after a refused launch", n)
		}
		assertHeapGrowth(t, before, 64<<20)
	})
	t.Run("enormous answer: refused", func(t *testing.T) {
		t.Parallel()
		// 5,000 components of 4 KiB each: a 20 MB Describe answer, which
		// go-plugin's connection (no receive limit) accepts whole.
		h, _ := newHost(t, manyDir(t, 0), func(o *host.Options) {
			o.PluginEnv = []string{"NEXUS_TEST_MANY=5000", "NEXUS_TEST_MANY_PAD=4096"}
		})
		before := heapInUse()
		_, err := callTool(context.Background(), h, "t00000", `{}`)
		if !errors.Is(err, component.ErrLaunch) {
			t.Fatalf("err = %v, want ErrLaunch", err)
		}
		msg := err.Error()
		t.Logf("error: %s", short(msg))
		if len(msg) > 64<<10 {
			t.Errorf("error is %d bytes, %d lines long: cap the Describe answer's size and summarize the difference", len(msg), strings.Count(msg, "\n"))
		}
		assertHeapGrowth(t, before, 64<<20)
	})
}

// Child mode: the test binary acts as a host calling one tool, so a test
// can survive a host that crashes (a Go stack overflow cannot be
// recovered).
const (
	childEnv     = "NEXUS_HOSTILE_CHILD_ROOT"
	childToolEnv = "NEXUS_HOSTILE_CHILD_TOOL"
)

func runChild(root, tool string) {
	h := host.New(host.Options{})
	h.Discover([]manifest.Root{{Dir: root, Explicit: true}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	out, err := callTool(ctx, h, tool, `{"children": [{"children": []}]}`)
	cancel()
	h.Close()
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("output:", string(out))
}

// TestRecursiveSchemas: tools whose input schema is a $ref cycle that
// consumes no input. Calling them must fail with a clear error (or
// succeed), never crash the host; the deep check must flag them; a
// legitimately recursive schema keeps working.
func TestRecursiveSchemas(t *testing.T) {
	t.Parallel()
	root := pluginRoot(t, "test/testplugins/cyclic")
	m, diags := manifest.Load(filepath.Join(root, "cyclic", manifest.FileName))
	if diags.HasErrors() {
		t.Fatal(diags.Err())
	}
	t.Run("deep check", func(t *testing.T) {
		t.Parallel()
		var got string
		for _, d := range manifest.CheckSchemas(m) {
			got += d.String() + "\n"
		}
		for _, w := range []string{`input_schema of tool "self"`, `input_schema of tool "pair"`} {
			if !strings.Contains(got, w) {
				t.Errorf("CheckSchemas does not flag %s (a $ref cycle): %q", w, got)
			}
		}
		if strings.Contains(got, `"tree"`) {
			t.Errorf("CheckSchemas flags the valid recursive schema: %s", got)
		}
	})
	var mu sync.Mutex // children start plugins; keep them few at once
	for _, tool := range []string{"self", "pair", "tree"} {
		t.Run("call "+tool, func(t *testing.T) {
			t.Parallel()
			mu.Lock()
			defer mu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+root, childToolEnv+"="+tool)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("the host crashed calling %s: %v\n%s", tool, err, short(stackTop(string(out))))
			}
			got := strings.TrimSpace(string(out))
			t.Logf("%s: %s", tool, short(got))
			if tool == "tree" && !strings.HasPrefix(got, "output:") {
				t.Errorf("valid recursive schema: %s", got)
			}
			if tool != "tree" && strings.HasPrefix(got, "error:") && !strings.Contains(got, "schema") {
				t.Errorf("error does not say the schema is the problem: %s", got)
			}
		})
	}
}

// stackTop keeps the head of a crash: the fatal error and its first frames.
func stackTop(s string) string {
	if i := strings.Index(s, "fatal error"); i >= 0 {
		s = s[i:]
	}
	lines := strings.SplitN(s, "\n", 12)
	return strings.Join(lines[:min(len(lines), 11)], "\n")
}
