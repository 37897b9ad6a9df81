package telemetry

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
)

// Operation names, also the names of the host's spans.
const (
	OpToolCall      = "tool.call"
	OpAgentRun      = "agent.run"
	OpTaskInstances = "task.instances"
	OpTaskEvaluate  = "task.evaluate"
)

// around surrounds one operation: it may replace the context, and the
// returned function is called with the operation's error when it ends.
type around func(ctx context.Context, op string) (context.Context, func(error))

// wrapTool, wrapAgent and wrapTask apply one around to each kind, so the
// tracing and metrics processors share how they hook into calls.
func wrapTool(next component.Tool, a around) component.Tool {
	return component.ToolFunc(func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		ctx, end := a(ctx, OpToolCall)
		out, err := next.Call(ctx, input)
		end(err)
		return out, err
	})
}

func wrapAgent(next component.Agent, a around) component.Agent {
	return component.AgentFunc(func(ctx context.Context, instance json.RawMessage) (json.RawMessage, error) {
		ctx, end := a(ctx, OpAgentRun)
		out, err := next.Run(ctx, instance)
		end(err)
		return out, err
	})
}

func wrapTask(next component.Task, a around) component.Task { return &task{next, a} }

type task struct {
	next component.Task
	a    around
}

func (t *task) Instances(ctx context.Context, args json.RawMessage) iter.Seq2[component.Instance, error] {
	return func(yield func(component.Instance, error) bool) {
		ctx, end := t.a(ctx, OpTaskInstances)
		var err error
		for inst, e := range t.next.Instances(ctx, args) {
			if e != nil {
				err = e
			}
			if !yield(inst, e) {
				break
			}
		}
		end(err)
	}
}

func (t *task) Evaluate(ctx context.Context, args json.RawMessage, inst component.Instance, output json.RawMessage) (component.Result, error) {
	ctx, end := t.a(ctx, OpTaskEvaluate)
	res, err := t.next.Evaluate(ctx, args, inst, output)
	end(err)
	return res, err
}

// processors builds the three per-kind processors of one concern from a
// function that makes the around for an entry.
type processors struct {
	name string
	make func(meta registry.Meta) around
}

func (p processors) Tools() registry.Processor[component.Tool] {
	return registry.ProcessorFunc[component.Tool](p.name, func(m registry.Meta, next component.Tool) (component.Tool, error) {
		return wrapTool(next, p.make(m)), nil
	})
}

func (p processors) Agents() registry.Processor[component.Agent] {
	return registry.ProcessorFunc[component.Agent](p.name, func(m registry.Meta, next component.Agent) (component.Agent, error) {
		return wrapAgent(next, p.make(m)), nil
	})
}

func (p processors) Tasks() registry.Processor[component.Task] {
	return registry.ProcessorFunc[component.Task](p.name, func(m registry.Meta, next component.Task) (component.Task, error) {
		return wrapTask(next, p.make(m)), nil
	})
}
