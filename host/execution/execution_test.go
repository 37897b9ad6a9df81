package execution_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/runtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRequireWithoutExecution(t *testing.T) {
	t.Parallel()
	_, err := execution.Require(context.Background(), `tool "shell/run_command"`)
	if !errors.Is(err, execution.ErrNoExecution) {
		t.Fatalf("err = %v, want ErrNoExecution", err)
	}
	e := execution.New(execution.Options{})
	defer e.Close()
	got, err := execution.Require(execution.With(context.Background(), e), "x")
	if err != nil || got != e {
		t.Fatalf("Require = %p, %v; want the attached execution", got, err)
	}
}

func TestRuntimesAreLazySharedAndClosed(t *testing.T) {
	t.Parallel()
	e := execution.New(execution.Options{Runtime: "local", Providers: runtime.DefaultProviders()})
	var wg sync.WaitGroup
	rts := make([]runtime.Runtime, 8)
	for i := range rts {
		wg.Go(func() {
			rt, err := e.Runtime(context.Background(), "")
			if err != nil {
				t.Error(err)
			}
			rts[i] = rt
		})
	}
	wg.Wait()
	for _, rt := range rts {
		if rt != rts[0] {
			t.Fatal("concurrent first uses made several runtimes")
		}
	}
	dir := rts[0].Dir()
	closed := false
	if err := e.OnClose(func() error { closed = true; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !closed {
		t.Error("OnClose function not run")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("runtime dir %s survives Close", dir)
	}
	if err := e.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if _, err := e.Runtime(context.Background(), ""); !errors.Is(err, execution.ErrClosed) {
		t.Errorf("Runtime after Close: %v, want ErrClosed", err)
	}
	if _, err := e.Attach("k", func() (any, func() error, error) { return 1, nil, nil }); !errors.Is(err, execution.ErrClosed) {
		t.Errorf("Attach after Close: %v, want ErrClosed", err)
	}
}

func TestUnknownRuntimeProvider(t *testing.T) {
	t.Parallel()
	e := execution.New(execution.Options{Runtime: "docker"})
	defer e.Close()
	if _, err := e.Runtime(context.Background(), ""); err == nil {
		t.Fatal("unknown provider accepted")
	}
}

func TestTrajectoryAndState(t *testing.T) {
	t.Parallel()
	e := execution.New(execution.Options{})
	defer e.Close()
	e.Record(execution.Step{Kind: "llm", Name: "default"})
	e.Record(execution.Step{Kind: "tool", Name: "math/calculator"})
	steps := e.Trajectory()
	if len(steps) != 2 || steps[0].Seq != 1 || steps[1].Seq != 2 {
		t.Fatalf("trajectory = %+v", steps)
	}
	e.State().Set("k", []byte(`1`))
	if v, ok := e.State().Get("k"); !ok || string(v) != "1" {
		t.Errorf("state k = %s, %v", v, ok)
	}
	e.State().Set("k", nil)
	if _, ok := e.State().Get("k"); ok {
		t.Error("empty value did not delete the key")
	}
	n := 0
	for range 3 {
		v, err := e.Attach("once", func() (any, func() error, error) { n++; return n, nil, nil })
		if err != nil || v != 1 {
			t.Fatalf("Attach = %v, %v", v, err)
		}
	}
}
