package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/manifest"
)

// ExecutionOptions describe a new execution; see execution.Options.
type ExecutionOptions struct {
	RunID, InstanceID string
	Task              string
	TaskArgs          json.RawMessage
	// LLM is the default LLM client name.
	LLM string
	// Network lets the execution's runtime reach the network.
	Network bool
}

// socketsKey stores an execution's go-plugin socket dir.
type socketsKey struct{}

// NewExecution returns an execution wired to the host: its LLM clients,
// its runtime provider, and a socket dir shared with its runtime so that
// runtime tools started inside can talk to the host. Close it when done.
func (h *Host) NewExecution(opts ExecutionOptions) (*execution.Execution, error) {
	sockets, err := os.MkdirTemp("", "nexus-sockets-*")
	if err != nil {
		return nil, fmt.Errorf("execution: socket dir: %w", err)
	}
	eopts := execution.Options{
		RunID: opts.RunID, InstanceID: opts.InstanceID, Task: opts.Task, TaskArgs: opts.TaskArgs, LLM: opts.LLM,
		LLMs: h.opts.LLMs, Providers: h.opts.Providers, Runtime: h.opts.Runtime,
	}
	eopts.RuntimeOptions.Network = opts.Network
	eopts.RuntimeOptions.Binds = []string{sockets}
	// Runtime tools' binaries must be visible inside the sandbox, which
	// hides the host's /tmp.
	for _, m := range h.manifests {
		for _, c := range m.Tools {
			if c.Kind == manifest.ToolRuntime {
				eopts.RuntimeOptions.ReadOnly = append(eopts.RuntimeOptions.ReadOnly, m.Dir())
				break
			}
		}
	}
	if err := h.shareSockets(sockets); err != nil {
		os.RemoveAll(sockets)
		return nil, err
	}
	e := execution.New(eopts)
	_, err = e.Attach(socketsKey{}, func() (any, func() error, error) {
		return sockets, func() error { return os.RemoveAll(sockets) }, nil
	})
	if err != nil {
		os.RemoveAll(sockets)
		return nil, err
	}
	return e, nil
}

// runtimeTool is the registry loader of a runtime tool: nothing starts at
// lookup; each call runs in its execution's runtime.
func (h *Host) runtimeTool(m *manifest.Manifest, name string) registry.Loader[component.Tool] {
	return func(context.Context) (component.Tool, error) {
		return component.ToolFunc(func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
			exec, err := execution.Require(ctx, fmt.Sprintf("runtime tool %q", m.Plugin.Name+"/"+name))
			if err != nil {
				return nil, err
			}
			slot, err := h.runtimeSlot(ctx, exec, m)
			if err != nil {
				return nil, err
			}
			return slot.Tool(name).Call(ctx, input)
		}), nil
	}
}

// runtimeLauncherKey stores an execution's launcher of runtime tools.
type runtimeLauncherKey struct{ h *Host }

// runtimeSlot returns the slot of m's binary inside exec's runtime: one
// process per plugin per execution, stopped when the execution closes.
func (h *Host) runtimeSlot(ctx context.Context, exec *execution.Execution, m *manifest.Manifest) (*launch.Slot, error) {
	v, err := exec.Attach(runtimeLauncherKey{h}, func() (any, func() error, error) {
		sockets, err := exec.Attach(socketsKey{}, func() (any, func() error, error) {
			return nil, nil, fmt.Errorf("this execution was not made by Host.NewExecution, so runtime tools cannot start in it")
		})
		if err != nil {
			return nil, nil, err
		}
		rt, err := exec.Runtime(ctx, "")
		if err != nil {
			return nil, nil, fmt.Errorf("runtime tool %q: %w", m.Plugin.Name, err)
		}
		command := func(bin string) *osexec.Cmd { return rt.Command(context.Background(), bin) }
		l := launch.New(h.launchOptions(launch.WithCommand(command, sockets.(string)))...)
		return l, l.Close, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*launch.Launcher).Slot(m), nil
}

// shareSockets hands the socket dir to the sandbox's user when the sandbox
// runs as another user than the host: plugins create their sockets there.
func (h *Host) shareSockets(dir string) error {
	providers := h.opts.Providers
	if providers == nil {
		providers = runtime.DefaultProviders()
	}
	name := h.opts.Runtime
	if name == "" {
		name = "sandbox"
	}
	p, err := providers.Get(name)
	if err != nil {
		return fmt.Errorf("execution: %w", err)
	}
	sb, ok := p.(*runtime.Sandbox)
	if !ok {
		return nil
	}
	if uid, gid, ok := sb.User(); ok {
		if err := os.Chown(dir, uid, gid); err != nil {
			return fmt.Errorf("execution: hand the socket dir to the sandbox user: %w", err)
		}
	}
	return nil
}
