// This file is the executions section: what the ExecutionContext costs. A
// host-service round trip (plugin -> host -> another plugin's tool) against
// calling that tool directly; a sandbox start against a plain process
// start; and the setup and teardown of one execution, bare and with a
// runtime tool started in its sandbox.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/manifest"
)

var executionsSection = Section{Key: "executions", Title: "Executions, host services and sandboxes", Run: runExecutions}

const (
	roundTrips   = 3000
	sandboxRuns  = 40
	executionRun = 40
)

func runExecutions(env *Env, doc *Doc) error {
	ctx := context.Background()
	// The sandbox runs as another user when the host is root: it must be
	// able to reach the plugin dirs and socket dirs under the bench's
	// temp dir.
	if err := os.Chmod(env.Tmp, 0o755); err != nil {
		return err
	}
	root, err := env.Dir("executions")
	if err != nil {
		return err
	}
	for _, pkg := range []string{"test/testplugins/hostuser", "plugins/tools/math", "plugins/tools/shell"} {
		if _, err := env.PluginRoot("executions", pkg); err != nil {
			return err
		}
	}
	h := host.New(host.Options{})
	closeHost := onExit(func() { h.Close() })
	defer closeHost()
	if ds := h.Discover([]manifest.Root{{Dir: root, Explicit: true}}); ds.HasErrors() {
		return fmt.Errorf("discover: %v", ds)
	}

	// Host-service round trip.
	e, err := h.NewExecution(host.ExecutionOptions{RunID: "bench", InstanceID: "roundtrip"})
	if err != nil {
		return err
	}
	defer e.Close()
	ectx := execution.With(ctx, e)
	direct, err := h.Tools.Get(ctx, "calculator")
	if err != nil {
		return err
	}
	via, err := h.Tools.Get(ctx, "calc")
	if err != nil {
		return err
	}
	in := json.RawMessage(`{"expression":"6*7"}`)
	check := func(out json.RawMessage, err error) error {
		if err != nil {
			return err
		}
		if string(out) != `{"value":42}` {
			return fmt.Errorf("got %s", out)
		}
		return nil
	}
	directCall := func(ctx context.Context) error { return check(direct.Call(ctx, in)) }
	viaCall := func(ctx context.Context) error { return check(via.Call(ctx, in)) }
	for _, c := range []callFunc{directCall, viaCall} {
		if _, _, err := sequential(ectx, 300, c); err != nil {
			return err
		}
	}
	directLat, _, err := sequential(ectx, roundTrips, directCall)
	if err != nil {
		return err
	}
	viaLat, _, err := sequential(ectx, roundTrips, viaCall)
	if err != nil {
		return err
	}
	d, v := Summarize(directLat), Summarize(viaLat)
	doc.P("A tool that calls another tool through the host (`hostuser/calc` -> host service `CallTool` -> `math/calculator`), against the host calling `math/calculator` itself; both through the default pipeline (validation), in one execution. %s calls each.", Count(roundTrips))
	t := NewTable("path", "p50", "p99", "p50 ÷ direct")
	t.Row("host -> math/calculator", Dur(d.P50), Dur(d.P99), "1.00×")
	t.Row("host -> hostuser/calc -> host service -> math/calculator", Dur(v.P50), Dur(v.P99), DurRatio(v.P50, d.P50))
	doc.Table(t)

	// Sandbox start against a plain process start.
	sb := &runtime.Sandbox{}
	if err := sb.Available(); err != nil {
		doc.P("Sandbox: unavailable here (%v); not measured.", err)
		return nil
	}
	plain := func(ctx context.Context) error { return exec.CommandContext(ctx, "true").Run() }
	inRuntime := func(p runtime.Provider) callFunc {
		return func(ctx context.Context) error {
			rt, err := p.New(ctx, runtime.Options{})
			if err != nil {
				return err
			}
			err = rt.Command(ctx, "true").Run()
			return errors.Join(err, rt.Close())
		}
	}
	rows := []struct {
		name string
		call callFunc
	}{
		{"exec `true`", plain},
		{"local runtime: new + `true` + close", inRuntime(runtime.Local{})},
		{"sandbox (bubblewrap): new + `true` + close", inRuntime(sb)},
	}
	st := NewTable("what", "p50", "p99", "p50 ÷ exec")
	var base Summary
	for i, r := range rows {
		lat, _, err := sequential(ctx, sandboxRuns, r.call)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		s := Summarize(lat)
		if i == 0 {
			base = s
		}
		st.Row(r.name, Dur(s.P50), Dur(s.P99), DurRatio(s.P50, base.P50))
	}
	doc.P("Starting a process in a runtime, %d runs each.", sandboxRuns)
	doc.Table(st)

	// Per-execution setup and teardown.
	bare := func(ctx context.Context) error {
		e, err := h.NewExecution(host.ExecutionOptions{RunID: "bench", InstanceID: "bare"})
		if err != nil {
			return err
		}
		return e.Close()
	}
	withTool := func(ctx context.Context) error {
		e, err := h.NewExecution(host.ExecutionOptions{RunID: "bench", InstanceID: "tool"})
		if err != nil {
			return err
		}
		tool, err := h.Tools.Get(ctx, "write_file")
		if err != nil {
			return errors.Join(err, e.Close())
		}
		_, err = tool.Call(execution.With(ctx, e), json.RawMessage(`{"path":"a.txt","content":"x"}`))
		return errors.Join(err, e.Close())
	}
	et := NewTable("execution", "p50", "p99")
	for _, r := range []struct {
		name string
		call callFunc
	}{
		{"new + close (nothing used)", bare},
		{"new + sandbox + shell plugin launched inside + one call + close", withTool},
	} {
		lat, _, err := sequential(ctx, executionRun, r.call)
		if err != nil {
			return fmt.Errorf("%s: %w", r.name, err)
		}
		s := Summarize(lat)
		et.Row(r.name, Dur(s.P50), Dur(s.P99))
	}
	doc.P("Setup and teardown of one execution (one evaluation instance), %d each.", executionRun)
	doc.Table(et)
	return nil
}
