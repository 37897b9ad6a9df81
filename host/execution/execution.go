// Package execution is the ExecutionContext of one task instance (or one
// CLI call): its identity, the LLM clients and runtimes it may use, the
// shared tool state, and the trajectory of every LLM and tool call made
// through host services. It travels in a context.Context; plugins never see
// it and reach it only through host services.
package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/runtime"
)

// ErrNoExecution: the context carries no execution.
var ErrNoExecution = errors.New("no execution in context")

// ErrClosed: the execution was closed.
var ErrClosed = errors.New("execution closed")

// Options describe an execution.
type Options struct {
	// RunID and InstanceID identify the evaluation run and instance; a CLI
	// call has a one-off id.
	RunID, InstanceID string
	// Task and TaskArgs name the task being solved, if any.
	Task     string
	TaskArgs json.RawMessage
	// LLMs are the LLM clients by name; nil offers none.
	LLMs *llm.Clients
	// LLM is the default LLM client name, used when a plugin names none.
	LLM string
	// Providers make runtimes; nil means runtime.DefaultProviders().
	Providers *runtime.Providers
	// Runtime is the provider of the default runtime ("sandbox" unless
	// set).
	Runtime string
	// RuntimeOptions configure every runtime the execution creates.
	RuntimeOptions runtime.Options
}

// Execution is the state one task instance shares across its agent, tools
// and evaluation.
type Execution struct {
	opts  Options
	state *State

	mu         sync.Mutex
	runtimes   map[string]*lazyRuntime
	closers    []func() error
	trajectory []Step
	usage      llm.Usage
	attached   map[any]*attachment
	closed     bool
}

// Step is one LLM or tool call made through host services.
type Step struct {
	Seq       int             `json:"seq"`
	Kind      string          `json:"kind"` // "llm" or "tool"
	Name      string          `json:"name"` // LLM client or tool name
	Plugin    string          `json:"plugin"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Usage     llm.Usage       `json:"usage"`
	StartedAt time.Time       `json:"started_at"`
	Duration  time.Duration   `json:"duration_ns"`
}

// New returns an execution; Close releases what it creates.
func New(opts Options) *Execution {
	if opts.Providers == nil {
		opts.Providers = runtime.DefaultProviders()
	}
	if opts.Runtime == "" {
		opts.Runtime = "sandbox"
	}
	return &Execution{opts: opts, state: newState(), runtimes: map[string]*lazyRuntime{}}
}

// Options returns what the execution was created with.
func (e *Execution) Options() Options { return e.opts }

type ctxKey struct{}

// With attaches e to ctx.
func With(ctx context.Context, e *Execution) context.Context {
	return context.WithValue(ctx, ctxKey{}, e)
}

// From returns the execution attached to ctx, if any.
func From(ctx context.Context) (*Execution, bool) {
	e, ok := ctx.Value(ctxKey{}).(*Execution)
	return e, ok
}

// Require returns the execution attached to ctx or an error saying what
// needs one.
func Require(ctx context.Context, what string) (*Execution, error) {
	if e, ok := From(ctx); ok {
		return e, nil
	}
	return nil, fmt.Errorf("%s: %w: it needs an execution (a run instance, or the one-off execution `nexus-host call` creates)", what, ErrNoExecution)
}

// LLM returns the LLM client name.
func (e *Execution) LLM(name string) (llm.Client, error) {
	if e.opts.LLMs == nil {
		return nil, fmt.Errorf("llm %q: no LLM clients are configured: add [llm.%s] to the host config", name, name)
	}
	return e.opts.LLMs.Get(name)
}

// State returns the execution's shared tool state.
func (e *Execution) State() *State { return e.state }

// Runtime returns the runtime called name ("" for the default), creating
// it on first use; every caller gets the same one.
func (e *Execution) Runtime(ctx context.Context, name string) (runtime.Runtime, error) {
	if name == "" {
		name = e.opts.Runtime
	}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	lr, ok := e.runtimes[name]
	if !ok {
		lr = &lazyRuntime{}
		e.runtimes[name] = lr
	}
	e.mu.Unlock()
	lr.once.Do(func() {
		p, err := e.opts.Providers.Get(name)
		if err != nil {
			lr.err = err
			return
		}
		lr.rt, lr.err = p.New(ctx, e.opts.RuntimeOptions)
	})
	return lr.rt, lr.err
}

type lazyRuntime struct {
	once sync.Once
	rt   runtime.Runtime
	err  error
}

// OnClose registers f to run at Close, before the runtimes are closed, in
// reverse order of registration (plugin processes started in a runtime
// stop before it goes away).
func (e *Execution) OnClose(f func() error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	e.closers = append(e.closers, f)
	return nil
}

// Record appends a step to the trajectory and adds its token usage.
func (e *Execution) Record(s Step) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s.Seq = len(e.trajectory) + 1
	e.trajectory = append(e.trajectory, s)
	e.usage.PromptTokens += s.Usage.PromptTokens
	e.usage.CompletionTokens += s.Usage.CompletionTokens
	e.usage.TotalTokens += s.Usage.TotalTokens
}

// Trajectory returns the steps recorded so far.
func (e *Execution) Trajectory() []Step {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.trajectory)
}

// Usage is the token usage of every LLM call so far.
func (e *Execution) Usage() llm.Usage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.usage
}

// Close runs the registered closers, then closes every runtime. It is safe
// to call twice; the second call does nothing.
func (e *Execution) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	closers := e.closers
	runtimes := e.runtimes
	e.mu.Unlock()

	var errs []error
	for i := len(closers) - 1; i >= 0; i-- {
		errs = append(errs, closers[i]())
	}
	for _, lr := range runtimes {
		// Wait for a creation in flight, then close what it made.
		lr.once.Do(func() { lr.err = ErrClosed })
		if lr.rt != nil {
			errs = append(errs, lr.rt.Close())
		}
	}
	return errors.Join(errs...)
}

// Attach returns the value stored under key, making it with mk on first
// use; mk's closer runs at Close like OnClose. The host keeps per-execution
// resources (a launcher for runtime tools, say) this way.
func (e *Execution) Attach(key any, mk func() (any, func() error, error)) (any, error) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil, ErrClosed
	}
	if e.attached == nil {
		e.attached = map[any]*attachment{}
	}
	a, ok := e.attached[key]
	if !ok {
		a = &attachment{}
		e.attached[key] = a
	}
	e.mu.Unlock()
	a.once.Do(func() {
		var closer func() error
		a.v, closer, a.err = mk()
		if a.err == nil && closer != nil {
			if err := e.OnClose(closer); err != nil {
				closer()
				a.v, a.err = nil, err
			}
		}
	})
	return a.v, a.err
}

type attachment struct {
	once sync.Once
	v    any
	err  error
}
