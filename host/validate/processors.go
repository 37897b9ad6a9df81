package validate

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
)

// checked wraps one call with an input check before and an output check
// after; an input the schema rejects never reaches the component.
func checked(meta registry.Meta, in, out *compiled, call func(context.Context, json.RawMessage) (json.RawMessage, error)) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		if err := in.check(meta, "input", ErrInvalidInput, input); err != nil {
			return nil, err
		}
		output, err := call(ctx, input)
		if err != nil {
			return nil, err
		}
		if err := out.check(meta, "output", ErrInvalidOutput, output); err != nil {
			return nil, err
		}
		return output, nil
	}
}

// Tools returns the processor for the tool registry.
func (v *Validator) Tools() registry.Processor[component.Tool] {
	return registry.ProcessorFunc[component.Tool](v.Name(), func(meta registry.Meta, next component.Tool) (component.Tool, error) {
		return component.ToolFunc(checked(meta, v.schema(meta.Component.InputSchema), v.schema(meta.Component.OutputSchema), next.Call)), nil
	})
}

// Agents returns the processor for the agent registry.
func (v *Validator) Agents() registry.Processor[component.Agent] {
	return registry.ProcessorFunc[component.Agent](v.Name(), func(meta registry.Meta, next component.Agent) (component.Agent, error) {
		return component.AgentFunc(checked(meta, v.schema(meta.Component.InputSchema), v.schema(meta.Component.OutputSchema), next.Run)), nil
	})
}

// Tasks returns the processor for the task registry: arguments are checked
// against the input schema, agent outputs against the output schema.
func (v *Validator) Tasks() registry.Processor[component.Task] {
	return registry.ProcessorFunc[component.Task](v.Name(), func(meta registry.Meta, next component.Task) (component.Task, error) {
		return &task{next: next, meta: meta, args: v.schema(meta.Component.InputSchema), out: v.schema(meta.Component.OutputSchema)}, nil
	})
}

type task struct {
	next      component.Task
	meta      registry.Meta
	args, out *compiled
}

func (t *task) Instances(ctx context.Context, args json.RawMessage) iter.Seq2[component.Instance, error] {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if err := t.args.check(t.meta, "task arguments", ErrInvalidInput, args); err != nil {
		return func(yield func(component.Instance, error) bool) { yield(component.Instance{}, err) }
	}
	return t.next.Instances(ctx, args)
}

func (t *task) Evaluate(ctx context.Context, args json.RawMessage, inst component.Instance, output json.RawMessage) (component.Result, error) {
	// An agent output the task cannot read is the agent's failure; it is
	// reported as invalid input to the evaluation.
	if err := t.out.check(t.meta, "agent output", ErrInvalidInput, output); err != nil {
		return component.Result{}, err
	}
	return t.next.Evaluate(ctx, args, inst, output)
}
