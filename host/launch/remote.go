package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nexus-eval/nexus/host/component"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// Tool returns the tool name served by the slot's plugin. The process is
// looked up per call, so a relaunched plugin is picked up transparently.
func (s *Slot) Tool(name string) component.Tool {
	return &remoteTool{remote{s, manifest.KindTool, name}}
}

// Agent returns the agent name served by the slot's plugin.
func (s *Slot) Agent(name string) component.Agent {
	return &remoteAgent{remote{s, manifest.KindAgent, name}}
}

// Task returns the task name served by the slot's plugin.
func (s *Slot) Task(name string) component.Task {
	return &remoteTask{remote{s, manifest.KindTask, name}}
}

// Origin describes the process currently serving the slot's components,
// or the zero Origin when none runs. It never waits: SHA256 is empty while
// the binary is still being hashed.
func (s *Slot) Origin() component.Origin {
	p := s.cur.Load()
	if p == nil {
		return component.Origin{}
	}
	sha, _ := p.digest.ready()
	return component.Origin{SHA256: sha, Protocol: p.Protocol, PID: p.pid}
}

type remote struct {
	slot *Slot
	kind manifest.Kind
	name string
}

// domain turns a component's reported error into a *component.Error.
func (r remote) domain(e *pluginv1.Error) error {
	return &component.Error{Plugin: r.slot.m.Plugin.Name, Kind: string(r.kind), Component: r.name, Code: e.GetCode(), Message: e.GetMessage()}
}

// transport wraps a gRPC failure with the plugin's name and, when the
// process is gone, what it last wrote to stderr.
func (r remote) transport(ctx context.Context, p *Process, err error) error {
	ctxErr := ctx.Err()
	// The deadline travels with the call, so the plugin may report it a
	// moment before the caller's own timer fires.
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		ctxErr = context.DeadlineExceeded
	case codes.Canceled:
		ctxErr = context.Canceled
	}
	if ctxErr != nil {
		return fmt.Errorf("%s %q (plugin %q): %w", r.kind, r.name, r.slot.m.Plugin.Name, ctxErr)
	}
	// A broken connection usually means the process died: say how.
	if status.Code(err) == codes.Unavailable || p.Exited() {
		if crash := p.crashError(); crash != nil {
			return fmt.Errorf("%s %q: %w", r.kind, r.name, crash)
		}
	}
	return fmt.Errorf("%w: %s %q (plugin %q): %v", component.ErrTransport, r.kind, r.name, r.slot.m.Plugin.Name, err)
}

// unary makes one call on the slot's live process: it tags the call for
// host services, carries the trace, and turns transport and domain
// failures into the host's errors. rpc returns the output and the domain
// error of the response.
func (r remote) unary(ctx context.Context, rpc func(ctx context.Context, p *Process) ([]byte, *pluginv1.Error, error)) (json.RawMessage, error) {
	p, err := r.slot.Process(ctx)
	if err != nil {
		return nil, err
	}
	p.begin()
	defer p.end()
	ctx, endCall := r.slot.beginCall(ctx)
	defer endCall()
	out, perr, err := rpc(wire.InjectTrace(ctx), p)
	switch {
	case err != nil:
		return nil, r.transport(ctx, p, err)
	case perr != nil:
		return nil, r.domain(perr)
	}
	return out, nil
}

type remoteTool struct{ remote }

func (r *remoteTool) Call(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	return r.unary(ctx, func(ctx context.Context, p *Process) ([]byte, *pluginv1.Error, error) {
		resp, err := p.RPC.Tool.Call(ctx, &pluginv1.CallRequest{Name: r.name, Input: input, HostServiceId: p.HostID})
		return resp.GetOutput(), resp.GetError(), err
	})
}

type remoteAgent struct{ remote }

func (r *remoteAgent) Run(ctx context.Context, instance json.RawMessage) (json.RawMessage, error) {
	return r.unary(ctx, func(ctx context.Context, p *Process) ([]byte, *pluginv1.Error, error) {
		resp, err := p.RPC.Agent.Run(ctx, &pluginv1.RunRequest{Name: r.name, Input: instance, HostServiceId: p.HostID})
		return resp.GetOutput(), resp.GetError(), err
	})
}

type remoteTask struct{ remote }

func (r *remoteTask) Instances(ctx context.Context, args json.RawMessage) iter.Seq2[component.Instance, error] {
	return func(yield func(component.Instance, error) bool) {
		p, err := r.slot.Process(ctx)
		if err != nil {
			yield(component.Instance{}, err)
			return
		}
		p.begin()
		defer p.end()
		ctx, endCall := r.slot.beginCall(ctx)
		defer endCall()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel() // stops the stream when the consumer stops early
		stream, err := p.RPC.Task.ListInstances(wire.InjectTrace(ctx), &pluginv1.ListInstancesRequest{Name: r.name, Args: args, HostServiceId: p.HostID})
		if err != nil {
			yield(component.Instance{}, r.transport(ctx, p, err))
			return
		}
		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(component.Instance{}, r.transport(ctx, p, err))
				return
			}
			if e := msg.GetError(); e != nil {
				yield(component.Instance{}, r.domain(e))
				return
			}
			inst := msg.GetInstance()
			if !yield(component.Instance{ID: inst.GetId(), Data: inst.GetData()}, nil) {
				return
			}
		}
	}
}

func (r *remoteTask) Evaluate(ctx context.Context, args json.RawMessage, inst component.Instance, output json.RawMessage) (component.Result, error) {
	var res component.Result
	_, err := r.unary(ctx, func(ctx context.Context, p *Process) ([]byte, *pluginv1.Error, error) {
		resp, err := p.RPC.Task.Evaluate(ctx, &pluginv1.EvaluateRequest{
			Name:          r.name,
			Args:          args,
			Instance:      &pluginv1.Instance{Id: inst.ID, Data: inst.Data},
			Output:        output,
			HostServiceId: p.HostID,
		})
		res = component.Result{Score: resp.GetScore(), Passed: resp.GetPassed(), Details: resp.GetDetails()}
		return nil, resp.GetError(), err
	})
	if err != nil {
		return component.Result{}, err
	}
	return res, nil
}

// Interface guards.
var (
	_ component.Tool  = (*remoteTool)(nil)
	_ component.Agent = (*remoteAgent)(nil)
	_ component.Task  = (*remoteTask)(nil)
)

// beginCall tags a call for per-call host services when the host asks to.
func (s *Slot) beginCall(ctx context.Context) (context.Context, func()) {
	if s.l.cfg.beginCall == nil {
		return ctx, func() {}
	}
	return s.l.cfg.beginCall(ctx, s.m)
}
