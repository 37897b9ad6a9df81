// This file is section 5: evaluation runs. Host overhead per instance (the
// arith task and the oracle agent, 1,000 instances, through the runner with
// the local runtime) against the same work without the runner and
// processors (the registry with NoProcessors, no database) and against the
// same work in-process (Go function calls on the same instances);
// throughput at concurrency 1, 2 and 8; and the database write cost of one
// instance result.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/runner"
	"github.com/nexus-eval/nexus/host/store"
	"github.com/nexus-eval/nexus/manifest"
)

var runSection = Section{Key: "run", Title: "5. Evaluation runs", Run: runRuns}

const (
	runInstances = 1000
	runRounds    = 3 // each figure is the median of this many runs
	dbWrites     = 2000
)

func runRuns(env *Env, doc *Doc) error {
	ctx := context.Background()
	root, err := env.PluginRoot("run-plugins", "plugins/tasks/arith")
	if err != nil {
		return err
	}
	if _, err := env.builder.PluginDir(root, "plugins/agents/oracle"); err != nil {
		return err
	}
	dir, err := env.Dir("run-db")
	if err != nil {
		return err
	}
	newHost := func(noProc bool) (*host.Host, func(), error) {
		h := host.New(host.Options{Runtime: "local", NoProcessors: noProc, HealthInterval: -1})
		closeHost := onExit(func() { h.Close() })
		if ds := h.Discover([]manifest.Root{{Dir: root, Explicit: true}}); len(ds) != 0 {
			closeHost()
			return nil, nil, fmt.Errorf("discover: %v", ds)
		}
		return h, closeHost, nil
	}
	args := json.RawMessage(fmt.Sprintf(`{"n": %d}`, runInstances))

	// The runner, end to end: plugins, processors, one execution and one
	// durable database write per instance.
	h, closeHost, err := newHost(false)
	if err != nil {
		return err
	}
	defer closeHost()
	st, err := store.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	viaRunner := func(conc int) (time.Duration, error) {
		var best []time.Duration
		for range runRounds {
			start := time.Now()
			sum, err := runner.Run(ctx, runner.Config{Host: h, Store: st, Task: "arith", Agent: "oracle", TaskArgs: args, Concurrency: conc})
			if err != nil {
				return 0, err
			}
			if sum.Passed != runInstances {
				return 0, fmt.Errorf("runner: %d of %d passed", sum.Passed, runInstances)
			}
			best = append(best, time.Since(start))
		}
		return Median(best), nil
	}
	if _, err := viaRunner(1); err != nil { // warm up: plugins launched, database created
		return err
	}
	runnerTimes := map[int]time.Duration{}
	for _, c := range []int{1, 2, 8} {
		if runnerTimes[c], err = viaRunner(c); err != nil {
			return err
		}
	}

	// The same calls through the registry without processors, runner or
	// database: what the plugin round trips cost.
	hn, closeBare, err := newHost(true)
	if err != nil {
		return err
	}
	defer closeBare()
	task, err := hn.Tasks.Get(ctx, "arith")
	if err != nil {
		return err
	}
	agent, err := hn.Agents.Get(ctx, "oracle")
	if err != nil {
		return err
	}
	var insts []component.Instance
	bare := func() (time.Duration, error) {
		var ds []time.Duration
		for range runRounds {
			insts = insts[:0]
			start := time.Now()
			for inst, err := range task.Instances(ctx, args) {
				if err != nil {
					return 0, err
				}
				insts = append(insts, inst)
				out, err := agent.Run(ctx, inst.Data)
				if err != nil {
					return 0, err
				}
				res, err := task.Evaluate(ctx, args, inst, out)
				if err != nil {
					return 0, err
				}
				if !res.Passed {
					return 0, fmt.Errorf("bare: %s failed", inst.ID)
				}
			}
			ds = append(ds, time.Since(start))
		}
		return Median(ds), nil
	}
	if _, err := bare(); err != nil {
		return err
	}
	bareTime, err := bare()
	if err != nil {
		return err
	}

	// In-process: the oracle's and the scorer's work as Go calls on the
	// same instances (decode the instance, answer with its reference,
	// decode the answer and compare with the reference).
	inProc := func() (time.Duration, error) {
		var ds []time.Duration
		for range runRounds * 10 {
			start := time.Now()
			for _, inst := range insts {
				out, err := oracleInProcess(inst.Data)
				if err != nil {
					return 0, err
				}
				ok, err := scoreInProcess(inst.Data, out)
				if err != nil || !ok {
					return 0, fmt.Errorf("in-process: %s: %v", inst.ID, err)
				}
			}
			ds = append(ds, time.Since(start))
		}
		return Median(ds), nil
	}
	inProcTime, err := inProc()
	if err != nil {
		return err
	}

	// The database write of one instance result, as the runner makes it.
	write, err := dbWriteCost(ctx, dir)
	if err != nil {
		return err
	}

	per := func(d time.Duration) time.Duration { return d / runInstances }
	doc.P("The arith task and the oracle agent over %d instances (`--runtime local`), median of %d runs. "+
		"\"Runner\" is `runner.Run` end to end: instance stream, one execution per instance, agent and evaluation "+
		"through the validation processors, one durable (synchronous=FULL) database write per instance. "+
		"\"Registry, no processors\" makes the same plugin calls in a loop without the runner, validation or database. "+
		"\"In-process\" does the same work as Go calls on the same instances (decode, answer with the reference, score).",
		runInstances, runRounds)
	t := NewTable("path", "per instance", "1,000 instances", "vs in-process", "vs registry")
	t.Row("runner, concurrency 1", Dur(per(runnerTimes[1])), Dur(runnerTimes[1]), DurRatio(runnerTimes[1], inProcTime), DurRatio(runnerTimes[1], bareTime))
	t.Row("registry, no processors (no runner, no database)", Dur(per(bareTime)), Dur(bareTime), DurRatio(bareTime, inProcTime), "1.00×")
	t.Row("in-process Go calls", Dur(per(inProcTime)), Dur(inProcTime), "1.00×", "")
	doc.Table(t)
	doc.P("Host overhead per instance (runner minus in-process): **%s**. A durable database write measured alone "+
		"(below) costs %s; in a run it overlaps with the instance stream, so the two do not simply add up.",
		Dur(per(runnerTimes[1])-per(inProcTime)), Dur(write))

	doc.H3("Throughput")
	tp := NewTable("concurrency", "1,000 instances", "instances/s", "vs concurrency 1")
	for _, c := range []int{1, 2, 8} {
		tp.Row(c, Dur(runnerTimes[c]), Rate(runInstances/runnerTimes[c].Seconds()), Ratio(runnerTimes[1].Seconds(), runnerTimes[c].Seconds()))
	}
	doc.Table(tp)

	doc.H3("Database write per instance")
	doc.P("`store.RecordInstance` of one result like the runner's (output and details, no steps), %d writes, "+
		"WAL with synchronous=FULL: **%s** per instance (%s).", dbWrites, Dur(write), Rate(1/write.Seconds()))
	return nil
}

func oracleInProcess(data json.RawMessage) (json.RawMessage, error) {
	var inst map[string]json.RawMessage
	if err := json.Unmarshal(data, &inst); err != nil {
		return nil, err
	}
	ref, ok := inst["reference"]
	if !ok {
		return nil, fmt.Errorf("no reference")
	}
	var v any
	if err := json.Unmarshal(ref, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

func scoreInProcess(data, out json.RawMessage) (bool, error) {
	var inst struct {
		Reference struct {
			Answer int64 `json:"answer"`
		} `json:"reference"`
	}
	var o struct {
		Answer float64 `json:"answer"`
	}
	if err := json.Unmarshal(data, &inst); err != nil {
		return false, err
	}
	if err := json.Unmarshal(out, &o); err != nil {
		return false, err
	}
	// The task also reports details.
	if _, err := json.Marshal(map[string]any{"expected": inst.Reference.Answer, "got": o.Answer}); err != nil {
		return false, err
	}
	return o.Answer == float64(inst.Reference.Answer), nil
}

func dbWriteCost(ctx context.Context, dir string) (time.Duration, error) {
	st, err := store.Open(ctx, filepath.Join(dir, "writes.db"))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	r := &store.Run{Task: "arith", Agent: "oracle"}
	if err := st.CreateRun(ctx, r); err != nil {
		return 0, err
	}
	now := time.Now()
	start := time.Now()
	for i := range dbWrites {
		res := store.InstanceResult{
			RunID: r.ID, InstanceID: fmt.Sprintf("arith-%05d", i), Passed: true, Score: 1,
			Output: json.RawMessage(`{"answer":42}`), Details: json.RawMessage(`{"expected":42,"got":42}`),
			DurationMS: 1, StartedAt: now, EndedAt: now,
		}
		if err := st.RecordInstance(ctx, res, nil); err != nil {
			return 0, err
		}
	}
	return time.Since(start) / dbWrites, nil
}
