package registry_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/manifest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func meta(plugin, name string) registry.Meta {
	return registry.Meta{Plugin: plugin, Component: manifest.Component{Name: name}, Source: plugin + "/nexus.toml"}
}

// tag is a processor that appends its name to a string value.
type tag struct {
	name  string
	calls *atomic.Int32
}

func (p tag) Name() string { return p.name }

func (p tag) Process(_ registry.Meta, v string) (string, error) {
	p.calls.Add(1)
	return v + "+" + p.name, nil
}

func TestProcessorsRunInOrderOnceAtLoad(t *testing.T) {
	t.Parallel()
	r := registry.New[string](manifest.KindTool)
	var calls atomic.Int32
	r.Use(tag{"validate", &calls}, tag{"trace", &calls})
	if err := r.Register(registry.Meta{Component: manifest.Component{Name: "x"}}, "x"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		v, err := r.Get(context.Background(), "x")
		if err != nil {
			t.Fatal(err)
		}
		if v != "x+validate+trace" {
			t.Fatalf("Get = %q, want processors applied in order", v)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("processors ran %d times, want once each (2)", n)
	}
	var names []string
	for _, p := range r.Processors() {
		names = append(names, p.Name())
	}
	if diff := cmp.Diff([]string{"validate", "trace"}, names); diff != "" {
		t.Errorf("Processors() (-want +got):\n%s", diff)
	}
	if got, _ := r.Lookup("x"); got.Plugin != registry.Builtin || got.Source != "in-process" {
		t.Errorf("Register meta = %+v, want builtin in-process", got)
	}
}

func TestConcurrentFirstLookupsShareOneLoad(t *testing.T) {
	t.Parallel()
	r := registry.New[int](manifest.KindTool)
	var loads atomic.Int32
	release := make(chan struct{})
	if err := r.Add(meta("p", "slow"), func(context.Context) (int, error) {
		loads.Add(1)
		<-release
		return 42, nil
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]int, 32)
	for i := range results {
		wg.Go(func() {
			v, err := r.Get(context.Background(), "slow")
			if err != nil {
				t.Error(err)
			}
			results[i] = v
		})
	}
	time.Sleep(20 * time.Millisecond) // let the lookups pile up on the load
	close(release)
	wg.Wait()
	if n := loads.Load(); n != 1 {
		t.Errorf("loader ran %d times, want 1", n)
	}
	for i, v := range results {
		if v != 42 {
			t.Errorf("lookup %d got %d", i, v)
		}
	}
}

func TestFailedLoadIsRetried(t *testing.T) {
	t.Parallel()
	r := registry.New[int](manifest.KindTool)
	var n atomic.Int32
	boom := errors.New("boom")
	r.Add(meta("p", "flaky"), func(context.Context) (int, error) {
		if n.Add(1) == 1 {
			return 0, boom
		}
		return 7, nil
	})
	if _, err := r.Get(context.Background(), "flaky"); !errors.Is(err, boom) {
		t.Fatalf("first Get: %v, want boom", err)
	}
	if v, err := r.Get(context.Background(), "flaky"); err != nil || v != 7 {
		t.Fatalf("second Get = %d, %v; want 7", v, err)
	}
}

func TestGetHonoursCallerContextButLoadGoesOn(t *testing.T) {
	t.Parallel()
	r := registry.New[int](manifest.KindTool)
	release := make(chan struct{})
	r.Add(meta("p", "slow"), func(context.Context) (int, error) { <-release; return 1, nil })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.Get(ctx, "slow"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get with expired ctx: %v", err)
	}
	close(release)
	if v, err := r.Get(context.Background(), "slow"); err != nil || v != 1 {
		t.Fatalf("Get after load = %d, %v", v, err)
	}
}

func TestProcessorErrorNamesProcessor(t *testing.T) {
	t.Parallel()
	r := registry.New[string](manifest.KindAgent)
	r.Use(failing{})
	r.Register(registry.Meta{Component: manifest.Component{Name: "a"}}, "a")
	_, err := r.Get(context.Background(), "a")
	if err == nil || !strings.Contains(err.Error(), `agent "builtin/a": processor schema: bad schema`) {
		t.Fatalf("err = %v", err)
	}
}

type failing struct{}

func (failing) Name() string { return "schema" }
func (failing) Process(registry.Meta, string) (string, error) {
	return "", errors.New("bad schema")
}

func TestNamesConflictsAndSuggestions(t *testing.T) {
	t.Parallel()
	r := registry.New[string](manifest.KindTool)
	for _, m := range []registry.Meta{meta("alpha", "search"), meta("beta", "search"), meta("alpha", "calculator")} {
		if err := r.Add(m, func(context.Context) (string, error) { return m.Qualified(), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Add(meta("alpha", "search"), nil); err == nil || !strings.Contains(err.Error(), "already registered from alpha/nexus.toml") {
		t.Errorf("duplicate qualified name: err = %v", err)
	}

	tests := []struct {
		name    string
		want    string
		wantErr error
		errHas  string
	}{
		{name: "calculator", want: "alpha/calculator"},
		{name: "alpha/search", want: "alpha/search"},
		{name: "beta/search", want: "beta/search"},
		{name: "search", wantErr: component.ErrAmbiguous, errHas: "alpha/search, beta/search"},
		{name: "calculater", wantErr: component.ErrNotFound, errHas: `did you mean "calculator"`},
		{name: "gamma/search", wantErr: component.ErrNotFound, errHas: `"alpha/search"`},
		{name: "zzzzzzzz", wantErr: component.ErrNotFound, errHas: "nexus-host list --kind tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := r.Get(context.Background(), tt.name)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tt.wantErr, tt.errHas)
				}
				return
			}
			if err != nil || v != tt.want {
				t.Fatalf("Get = %q, %v; want %q", v, err, tt.want)
			}
		})
	}

	conflicts := r.Conflicts()
	if len(conflicts) != 1 || conflicts[0].Name != "search" {
		t.Fatalf("Conflicts = %+v", conflicts)
	}
	s := conflicts[0].String()
	for _, want := range []string{"alpha/nexus.toml", "beta/nexus.toml", "qualified name"} {
		if !strings.Contains(s, want) {
			t.Errorf("conflict %q does not mention %q", s, want)
		}
	}
}

func TestListNeverLoads(t *testing.T) {
	t.Parallel()
	r := registry.New[int](manifest.KindTask)
	r.Add(meta("b", "two"), func(context.Context) (int, error) { t.Error("List loaded an entry"); return 0, nil })
	r.Add(meta("a", "one"), func(context.Context) (int, error) { t.Error("List loaded an entry"); return 0, nil })
	var got []string
	for _, m := range r.List() {
		got = append(got, m.Qualified()+":"+string(m.Kind))
	}
	if diff := cmp.Diff([]string{"a/one:task", "b/two:task"}, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
}
