package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
)

func TestKilledPluginFailsInFlightCallsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	pid := pidOf(t, h)
	block, err := h.Tools.Get(context.Background(), "block")
	if err != nil {
		t.Fatal(err)
	}
	const n = 100
	errs := make(chan error, n)
	var started sync.WaitGroup
	started.Add(n)
	for range n {
		go func() {
			started.Done()
			_, err := block.Call(context.Background(), json.RawMessage(`{}`))
			errs <- err
		}()
	}
	started.Wait()
	time.Sleep(100 * time.Millisecond) // let the calls reach the plugin
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for range n {
		err := <-errs
		if !errors.Is(err, component.ErrCrashed) || !errors.Is(err, component.ErrTransport) {
			t.Fatalf("in-flight call: err = %v, want ErrCrashed", err)
		}
		if !strings.Contains(err.Error(), "signal: killed") {
			t.Fatalf("crash error does not give the signal: %v", err)
		}
	}
	if d := time.Since(killed); d > time.Second {
		t.Errorf("in-flight calls took %v to fail, want < 1s", d)
	}
	if got := pidOf(t, h); got == pid {
		t.Errorf("next call still on killed pid %d", pid)
	}
}

func TestCrashLoopOpensBreaker(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	var last error
	for i := range 30 {
		out, err := call(t, h, "pid", `{}`)
		if err != nil {
			last = err
			if errors.Is(err, component.ErrCrashLoop) {
				if i < 4 {
					t.Fatalf("breaker opened after %d crashes", i)
				}
				break
			}
			continue
		}
		var p struct{ Pid int }
		json.Unmarshal(out, &p)
		syscall.Kill(p.Pid, syscall.SIGKILL)
		waitGone(t, p.Pid, 2*time.Second)
	}
	if !errors.Is(last, component.ErrCrashLoop) || !strings.Contains(last.Error(), "not relaunched") || !strings.Contains(last.Error(), "restart nexus-host") {
		t.Fatalf("after repeated crashes: err = %v, want a crash-loop error saying how to reset", last)
	}
}

func TestHungPluginIsKilledAndRelaunched(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"), func(o *host.Options) { o.HealthInterval = 100 * time.Millisecond })
	pid := pidOf(t, h)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// The stop takes effect asynchronously: wait until the kernel shows it.
	for deadline := time.Now().Add(2 * time.Second); procState(pid) != "T"; {
		if time.Now().After(deadline) {
			t.Fatalf("plugin %d not stopped after SIGSTOP (state %q)", pid, procState(pid))
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tool, _ := h.Tools.Get(ctx, "echo")
	_, err := tool.Call(ctx, json.RawMessage(`{"text":"x"}`))
	if !errors.Is(err, component.ErrCrashed) || !strings.Contains(err.Error(), "hung") {
		t.Fatalf("call to a stopped plugin: err = %v, want a crash naming the failed health check", err)
	}
	waitGone(t, pid, 2*time.Second)
	if got := pidOf(t, h); got == pid {
		t.Fatal("hung plugin not replaced")
	}
}

func TestIdlePluginStopsAndRelaunches(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"), func(o *host.Options) { o.IdleTimeout = 200 * time.Millisecond })
	pid := pidOf(t, h)
	waitGone(t, pid, 3*time.Second)
	if n := h.Running(); n != 0 {
		t.Errorf("%d processes after the idle timeout, want 0", n)
	}
	if got := pidOf(t, h); got == pid {
		t.Fatal("no relaunch after idle stop")
	}
}

// procState is the one-letter state of pid from /proc ("T" when stopped).
func procState(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	if rest == "" {
		return ""
	}
	return rest[:1]
}
