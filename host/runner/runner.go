package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/host/store"
	"github.com/nexus-eval/nexus/host/validate"
)

// Instance data fields the runner reads.
const (
	// DatasetRevisionField is the string field of an instance's data that
	// names the revision of the dataset it came from; the run records the
	// first instance's.
	DatasetRevisionField = "dataset_revision"
	// TaskErrorField is the string field of an instance's data that marks
	// the instance as unusable (a malformed exercise, say): the agent does
	// not run and the instance is recorded as a task_error with this
	// reason; the run goes on.
	TaskErrorField = "task_error"
)

var (
	// ErrInterrupted: the run's context was cancelled; the instances in
	// flight were recorded as cancelled and the run can be resumed.
	ErrInterrupted = errors.New("run interrupted")
	// ErrChanged: a run cannot be resumed because what determines its
	// results changed since it started.
	ErrChanged = errors.New("changed since the run started")
)

// Config describes one run.
type Config struct {
	// Host provides the task and the agent; Store records the run. Both
	// are required.
	Host  *host.Host
	Store *store.Store
	// Task and Agent name the components (short or qualified names). When
	// resuming they may be empty: the run's own are used.
	Task, Agent string
	// TaskArgs is the task's JSON arguments; nil means {} (or, when
	// resuming, the run's own).
	TaskArgs json.RawMessage
	// LLM names the default LLM client of every execution; LLMConfig is
	// where its public config is read from for the run record.
	LLM       string
	LLMConfig *llm.Config
	// Concurrency is how many instances run at once; 0 means
	// runtime.NumCPU().
	Concurrency int
	// Limit stops the instance stream after that many instances (resumed
	// runs count the skipped ones too); 0 means all.
	Limit int
	// Timeout bounds each instance (agent and evaluation); 0 means none.
	Timeout time.Duration
	// Resume is the id of a run to resume: only its instances without a
	// result, or with a retryable one (infra_error, timeout, cancelled),
	// run again.
	Resume string
	// ResumeLatest resumes the latest run with the same idempotency key
	// as this one, if there is one; otherwise a new run starts.
	ResumeLatest bool
	// Force resumes even when the plugins, dataset or LLM config changed
	// since the run started, or when the run is still marked running.
	Force bool
	// Progress, if set, is called after each instance (and each skipped
	// one), from one goroutine at a time; it must return quickly.
	Progress func(Progress)
	// Network lets the executions' runtimes reach the network.
	Network bool
	// HostVersion is recorded in the run; "" means the version of this
	// binary's build (see HostVersion).
	HostVersion string
}

// Progress is the state of a run after an instance ended.
type Progress struct {
	RunID string
	// Done counts the instances that ended in this invocation plus the
	// ones skipped because an earlier invocation finished them.
	Done    int
	Skipped int
	// Total is the number of instances, or -1 while the task is still
	// streaming them.
	Total int
	// Passed, Failed and Errors count the instances run in this
	// invocation (Failed: scored and not passed; Errors: by class).
	Passed, Failed int
	Errors         map[string]int
	Elapsed        time.Duration
	// Last is the instance that just ended; nil for a skipped one.
	Last *Instance
}

// errorCount is the number of errored instances in p.
func (p Progress) ErrorCount() int {
	n := 0
	for _, c := range p.Errors {
		n += c
	}
	return n
}

// Run runs cfg.Agent over the instances of cfg.Task and records the run.
//
// Errors before the run is created (unknown names, arguments the task
// rejects, a run that cannot be resumed) return no summary. Once the run
// exists Run returns its summary, with ErrInterrupted when ctx was
// cancelled (the run is marked interrupted), or with the error that
// stopped it (a failing instance stream or database; the run is marked
// failed). Instances that fail do not stop the run: they are recorded with
// their error class.
func Run(ctx context.Context, cfg Config) (*Summary, error) {
	if cfg.Host == nil || cfg.Store == nil {
		return nil, errors.New("runner: Config.Host and Config.Store are required")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = goruntime.NumCPU()
	}
	if cfg.Limit < 0 {
		return nil, fmt.Errorf("limit %d: it must be 0 (all instances) or more", cfg.Limit)
	}
	if cfg.HostVersion == "" {
		cfg.HostVersion = HostVersion()
	}
	var prev *store.Run
	if cfg.Resume != "" {
		var err error
		if prev, err = cfg.Store.GetRun(ctx, cfg.Resume); err != nil {
			return nil, fmt.Errorf("resume: %w", err)
		}
		if err := adopt(&cfg, prev); err != nil {
			return nil, err
		}
	}
	if cfg.Task == "" || cfg.Agent == "" {
		return nil, errors.New("a run needs a task and an agent: pass --task and --agent")
	}
	args, err := normalizeArgs(cfg.TaskArgs)
	if err != nil {
		return nil, err
	}
	taskMeta, err := cfg.Host.Tasks.Lookup(cfg.Task)
	if err != nil {
		return nil, err
	}
	agentMeta, err := cfg.Host.Agents.Lookup(cfg.Agent)
	if err != nil {
		return nil, err
	}
	llmRec, err := llmRecord(cfg.LLM, cfg.LLMConfig)
	if err != nil {
		return nil, err
	}
	task, err := cfg.Host.Tasks.Get(ctx, cfg.Task)
	if err != nil {
		return nil, err
	}
	agent, err := cfg.Host.Agents.Get(ctx, cfg.Agent)
	if err != nil {
		return nil, err
	}

	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	next, stop := iter.Pull2(task.Instances(runCtx, args))
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	first, ferr, more := next()
	if ferr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w before the first instance: %w", ErrInterrupted, ctx.Err())
		}
		return nil, ferr // it names the task
	}

	r := &store.Run{
		Task: cfg.Task, Agent: cfg.Agent, TaskArgs: args, LLM: llmRec,
		HostVersion: cfg.HostVersion, Status: store.StatusRunning,
	}
	if more {
		r.DatasetRevision = stringField(first.Data, DatasetRevisionField)
	}
	r.Plugins = pluginRefs(cfg.Host, taskMeta, agentMeta)
	if r.IdempotencyKey, err = store.IdempotencyKey(r.KeyParts()); err != nil {
		return nil, err
	}
	if cfg.ResumeLatest && prev == nil {
		found, err := cfg.Store.FindRunByKey(ctx, r.IdempotencyKey)
		switch {
		case err == nil:
			prev = found
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	st := &state{cfg: cfg, task: task, agent: agent, args: args, start: time.Now(),
		errors: map[string]int{}, total: -1}
	var done map[string]bool
	if prev != nil {
		if err := checkResume(prev, r, cfg.Force, &st.notes); err != nil {
			return nil, err
		}
		if err := cfg.Store.ReopenRun(ctx, prev.ID); err != nil {
			return nil, err
		}
		if done, err = cfg.Store.Done(ctx, prev.ID); err != nil {
			return nil, err
		}
		r = prev
		st.resumed = true
	} else if err := cfg.Store.CreateRun(ctx, r); err != nil {
		return nil, err
	}
	st.runID = r.ID

	// The producer owns the instance stream from here on.
	stopped = true
	jobs := make(chan component.Instance)
	var (
		streamErr error
		complete  bool
		streamed  int
	)
	producerDone := make(chan struct{})
	go func() {
		defer close(producerDone)
		defer close(jobs)
		defer stop()
		seen := map[string]bool{}
		emit := func(inst component.Instance) error {
			if inst.ID == "" {
				return fmt.Errorf("task %q yielded an instance without an id", cfg.Task)
			}
			if seen[inst.ID] {
				return fmt.Errorf("task %q yielded instance %q twice: instance ids must be unique", cfg.Task, inst.ID)
			}
			seen[inst.ID] = true
			streamed++
			if done[inst.ID] {
				st.skip()
				return nil
			}
			select {
			case jobs <- inst:
				return nil
			case <-runCtx.Done():
				return context.Cause(runCtx)
			}
		}
		inst, err, ok := first, ferr, more
		for ok && (cfg.Limit == 0 || streamed < cfg.Limit) {
			if err == nil {
				err = emit(inst)
			}
			if err != nil {
				if runCtx.Err() == nil {
					streamErr = err
				}
				return
			}
			inst, err, ok = next()
		}
		complete = true
		st.setTotal(streamed)
	}()

	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for inst := range jobs {
				if err := st.one(runCtx, inst); err != nil {
					cancelRun(err)
				}
			}
		})
	}
	wg.Wait()
	<-producerDone

	bg := context.WithoutCancel(ctx)
	status, runErr := store.StatusCompleted, error(nil)
	switch cause := context.Cause(runCtx); {
	case runCtx.Err() != nil && ctx.Err() == nil:
		status, runErr = store.StatusFailed, cause // the database failed
	case ctx.Err() != nil:
		status = store.StatusInterrupted
		runErr = fmt.Errorf("%w: %w: resume it with `nexus-host run --resume %s`", ErrInterrupted, ctx.Err(), r.ID)
	case streamErr != nil:
		status = store.StatusFailed
		runErr = fmt.Errorf("task %q: instance stream failed: %w: the results so far are recorded; resume with `nexus-host run --resume %s`", cfg.Task, streamErr, r.ID)
	}
	var errs []error
	if complete && status != store.StatusFailed {
		errs = append(errs, cfg.Store.SetTotal(bg, r.ID, streamed))
	}
	errs = append(errs, cfg.Store.FinishRun(bg, r.ID, status, time.Now()))
	if err := errors.Join(errs...); err != nil {
		runErr = errors.Join(runErr, err)
	}
	sum, err := Load(bg, cfg.Store, r.ID)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	sum.Resumed, sum.Notes = st.resumed, st.notes
	sum.Ran, sum.Skipped = st.ran, st.skipped
	return sum, runErr
}

// state is a run in progress.
type state struct {
	cfg   Config
	task  component.Task
	agent component.Agent
	args  json.RawMessage
	runID string
	start time.Time

	resumed bool
	notes   []string

	mu                    sync.Mutex
	ran, skipped          int
	passed, failed, total int
	errors                map[string]int
}

func (st *state) progress(last *Instance) {
	if st.cfg.Progress == nil {
		return
	}
	errs := make(map[string]int, len(st.errors))
	for k, v := range st.errors {
		errs[k] = v
	}
	st.cfg.Progress(Progress{
		RunID: st.runID, Done: st.ran + st.skipped, Skipped: st.skipped, Total: st.total,
		Passed: st.passed, Failed: st.failed, Errors: errs, Elapsed: time.Since(st.start), Last: last,
	})
}

func (st *state) skip() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.skipped++
	st.progress(nil)
}

func (st *state) setTotal(n int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.total = n
}

func (st *state) ended(res store.InstanceResult) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.ran++
	switch {
	case res.ErrorClass != store.ErrorNone:
		st.errors[res.ErrorClass]++
	case res.Passed:
		st.passed++
	default:
		st.failed++
	}
	in := instanceOf(res)
	st.progress(&in)
}

// one runs one instance in its own execution and records its result. The
// error is the database's: it stops the run.
func (st *state) one(runCtx context.Context, inst component.Instance) error {
	start := time.Now()
	res := store.InstanceResult{RunID: st.runID, InstanceID: inst.ID, StartedAt: start}
	var steps []store.Step
	var exec *execution.Execution
	if reason := stringField(inst.Data, TaskErrorField); reason != "" {
		res.ErrorClass, res.Error = store.ErrorTask, fmt.Sprintf("task %q: instance %q: %s", st.cfg.Task, inst.ID, reason)
	} else if e, err := st.cfg.Host.NewExecution(host.ExecutionOptions{
		RunID: st.runID, InstanceID: inst.ID, Task: st.cfg.Task, TaskArgs: st.args,
		LLM: st.cfg.LLM, Network: st.cfg.Network,
	}); err != nil {
		res.ErrorClass, res.Error = store.ErrorInfra, err.Error()
	} else {
		exec = e
		st.solve(runCtx, e, inst, &res)
		steps = stepsOf(e.Trajectory())
		u := e.Usage()
		res.Usage = store.Usage{PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	}
	res.EndedAt = time.Now()
	res.DurationMS = res.EndedAt.Sub(start).Milliseconds()
	err := st.cfg.Store.RecordInstance(context.WithoutCancel(runCtx), res, steps)
	if exec != nil {
		_ = exec.Close() // releases runtimes; nothing to record about it
	}
	if err != nil {
		return err
	}
	st.ended(res)
	return nil
}

// solve runs the agent and the evaluation of one instance under the
// instance's timeout, filling res.
func (st *state) solve(runCtx context.Context, e *execution.Execution, inst component.Instance, res *store.InstanceResult) {
	ictx, cancel := runCtx, context.CancelFunc(func() {})
	if st.cfg.Timeout > 0 {
		ictx, cancel = context.WithTimeout(runCtx, st.cfg.Timeout)
	}
	defer cancel()
	ictx = execution.With(ictx, e)
	out, err := st.agent.Run(ictx, inst.Data)
	if err != nil {
		res.ErrorClass, res.Error = classify(runCtx, ictx, err, true), describe(runCtx, ictx, "agent", st.cfg.Agent, err, st.cfg.Timeout)
		return
	}
	if json.Valid(out) {
		res.Output = out
	}
	verdict, err := st.task.Evaluate(ictx, st.args, inst, out)
	if err != nil {
		res.ErrorClass, res.Error = classify(runCtx, ictx, err, false), describe(runCtx, ictx, "task", st.cfg.Task, err, st.cfg.Timeout)
		return
	}
	res.Score, res.Passed = verdict.Score, verdict.Passed
	if len(verdict.Details) > 0 && json.Valid(verdict.Details) {
		res.Details = verdict.Details
	}
}

// classify returns the error class of a failed agent run (agent true) or
// evaluation.
func classify(runCtx, ictx context.Context, err error, agent bool) string {
	side := store.ErrorTask
	if agent {
		side = store.ErrorAgent
	}
	switch {
	case runCtx.Err() != nil:
		return store.ErrorCancelled
	case timedOut(ictx):
		return store.ErrorTimeout
	case errors.Is(err, runtime.ErrUnavailable):
		return store.ErrorInfra
	case errors.As(err, new(*component.Error)):
		return side
	case errors.Is(err, component.ErrCrashed):
		return side
	case errors.Is(err, component.ErrLaunch), errors.Is(err, component.ErrCrashLoop), errors.Is(err, component.ErrTransport):
		return store.ErrorInfra
	case !agent && errors.Is(err, validate.ErrInvalidInput):
		// The task refused the agent's output: the agent's fault.
		return store.ErrorAgent
	}
	return side
}

// deadlineSlack: a call that fails this close to the instance's deadline
// failed because of it. The deadline travels to the plugin with gRPC's
// coarser timeout encoding, so the plugin's side can expire a moment
// before the host's timer fires.
const deadlineSlack = 100 * time.Millisecond

func timedOut(ictx context.Context) bool {
	if errors.Is(ictx.Err(), context.DeadlineExceeded) {
		return true
	}
	d, ok := ictx.Deadline()
	return ok && time.Until(d) < deadlineSlack
}

func describe(runCtx, ictx context.Context, kind, name string, err error, timeout time.Duration) string {
	switch {
	case runCtx.Err() != nil:
		return fmt.Sprintf("%s %q: cancelled: %v", kind, name, err)
	case timedOut(ictx):
		return fmt.Sprintf("%s %q: instance timed out after %s: %v", kind, name, timeout, err)
	}
	return err.Error()
}

func stepsOf(tr []execution.Step) []store.Step {
	if len(tr) == 0 {
		return nil
	}
	out := make([]store.Step, len(tr))
	for i, s := range tr {
		out[i] = store.Step{
			Seq: s.Seq, Kind: s.Kind, Name: s.Name, Input: validOrNil(s.Input), Output: validOrNil(s.Output),
			Error: s.Error, StartedAt: s.StartedAt, DurationMS: s.Duration.Milliseconds(),
			Usage: store.Usage{PromptTokens: s.Usage.PromptTokens, CompletionTokens: s.Usage.CompletionTokens, TotalTokens: s.Usage.TotalTokens},
		}
	}
	return out
}

func validOrNil(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || !json.Valid(raw) {
		return nil
	}
	return raw
}

// stringField returns raw's top-level string field key, or "".
func stringField(raw json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	var s string
	if json.Unmarshal(m[key], &s) != nil {
		return ""
	}
	return s
}
