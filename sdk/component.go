package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/nexus-eval/nexus/manifest"
)

// Component is one agent, tool or task served by a plugin binary. Build one
// with [Tool], [Agent] or [Task] and pass it to [Serve].
type Component struct {
	kind  manifest.Kind
	entry manifest.Component
	// err holds a construction problem (for example a type without a JSON
	// Schema); Serve reports it before serving anything.
	err error

	call     func(ctx context.Context, input []byte) ([]byte, error)
	task     rawTask
	instance reflect.Type
}

// rawTask is a task with its arguments, instances and outputs as JSON.
type rawTask struct {
	instances func(ctx context.Context, args []byte, yield func(id string, data []byte) error) error
	evaluate  func(ctx context.Context, args, instance, output []byte) (Result, error)
}

// Option configures a component.
type Option func(*manifest.Component)

// WithTags labels a component for search and listing.
func WithTags(tags ...string) Option {
	return func(c *manifest.Component) { c.Tags = append(c.Tags, tags...) }
}

// Runtime marks a tool as a runtime tool: the host runs it inside the
// execution's sandbox rather than on the host.
func Runtime() Option {
	return func(c *manifest.Component) { c.Kind = manifest.ToolRuntime }
}

// TaskMode sets whether the component may run as a background task:
// manifest.TaskForbidden (the default), TaskOptional or TaskRequired.
func TaskMode(mode string) Option {
	return func(c *manifest.Component) { c.Task = mode }
}

// InputSchema replaces the input JSON Schema inferred from the Go type,
// for constraints a type cannot express (minimum, pattern, enum...). The
// handler must still accept every document the schema allows.
func InputSchema(schema string) Option {
	return func(c *manifest.Component) { c.InputSchema = schema }
}

// OutputSchema replaces the inferred output JSON Schema.
func OutputSchema(schema string) Option {
	return func(c *manifest.Component) { c.OutputSchema = schema }
}

// Tool serves fn as a tool. Its input and output JSON Schemas are inferred
// from In and Out (see github.com/google/jsonschema-go for the rules; a
// `jsonschema:"..."` struct tag describes a field).
func Tool[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) *Component {
	c := newComponent[In, Out](manifest.KindTool, name, description, opts)
	if c.entry.Kind == "" {
		c.entry.Kind = manifest.ToolLocal
	}
	c.call = typed(fn)
	return c
}

// Agent serves fn as an agent: it receives one task instance and returns
// its answer.
func Agent[In, Out any](name, description string, fn func(ctx context.Context, in In) (Out, error), opts ...Option) *Component {
	c := newComponent[In, Out](manifest.KindAgent, name, description, opts)
	c.call = typed(fn)
	return c
}

// Result is a task's verdict on one agent output.
type Result struct {
	// Score is in [0, 1].
	Score  float64
	Passed bool
	// Details is anything JSON-encodable that helps a human see why.
	Details any
}

// TaskHandler supplies the instances of a task and scores agent outputs.
// Args are the task arguments (`--task-arg k=v`), Inst one instance as the
// agent sees it, Out what the agent must return.
type TaskHandler[Args, Inst, Out any] interface {
	// Instances calls yield for every instance, in order, with a stable id.
	// It stops early when yield returns an error and returns that error.
	Instances(ctx context.Context, args Args, yield func(id string, inst Inst) error) error
	// Evaluate scores out, the agent's answer to inst.
	Evaluate(ctx context.Context, args Args, inst Inst, out Out) (Result, error)
}

// Task serves h as a task. The manifest's input schema is inferred from
// Args and its output schema from Out.
func Task[Args, Inst, Out any](name, description string, h TaskHandler[Args, Inst, Out], opts ...Option) *Component {
	c := newComponent[Args, Out](manifest.KindTask, name, description, opts)
	c.instance = reflect.TypeFor[Inst]()
	c.task = rawTask{
		instances: func(ctx context.Context, rawArgs []byte, yield func(string, []byte) error) error {
			args, err := decode[Args](rawArgs, "task arguments")
			if err != nil {
				return err
			}
			return h.Instances(ctx, args, func(id string, inst Inst) error {
				data, err := json.Marshal(inst)
				if err != nil {
					return fmt.Errorf("encode instance %q: %w", id, err)
				}
				return yield(id, data)
			})
		},
		evaluate: func(ctx context.Context, rawArgs, rawInst, rawOut []byte) (Result, error) {
			args, err := decode[Args](rawArgs, "task arguments")
			if err != nil {
				return Result{}, err
			}
			inst, err := decode[Inst](rawInst, "instance")
			if err != nil {
				return Result{}, err
			}
			out, err := decode[Out](rawOut, "agent output")
			if err != nil {
				return Result{}, err
			}
			return h.Evaluate(ctx, args, inst, out)
		},
	}
	return c
}

func newComponent[In, Out any](kind manifest.Kind, name, description string, opts []Option) *Component {
	c := &Component{kind: kind, entry: manifest.Component{Name: name, Description: description}}
	in, err := schemaFor[In]()
	if err != nil {
		c.err = fmt.Errorf("%s %q: input schema: %w", kind, name, err)
		return c
	}
	out, err := schemaFor[Out]()
	if err != nil {
		c.err = fmt.Errorf("%s %q: output schema: %w", kind, name, err)
		return c
	}
	c.entry.InputSchema, c.entry.OutputSchema = in, out
	for _, o := range opts {
		o(&c.entry)
	}
	if c.entry.Task == "" {
		c.entry.Task = manifest.TaskForbidden
	}
	return c
}

// anyJSON lets a handler take or return json.RawMessage for "any JSON
// document" instead of a byte array.
var anyJSON = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {},
}}

func schemaFor[T any]() (string, error) {
	s, err := jsonschema.For[T](anyJSON)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// typed adapts a typed handler to JSON bytes.
func typed[In, Out any](fn func(context.Context, In) (Out, error)) func(context.Context, []byte) ([]byte, error) {
	return func(ctx context.Context, raw []byte) ([]byte, error) {
		in, err := decode[In](raw, "input")
		if err != nil {
			return nil, err
		}
		out, err := fn(ctx, in)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("encode output: %w", err)
		}
		return b, nil
	}
}

func decode[T any](raw []byte, what string) (T, error) {
	var v T
	if len(raw) == 0 {
		raw = []byte("null")
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, Errorf(CodeInvalidInput, "decode %s: %v", what, err)
	}
	return v, nil
}

func marshal(v any, what string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	return b, nil
}
