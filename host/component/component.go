// Package component defines what the host calls: the Tool, Agent and Task
// interfaces every registry entry implements, whether it lives in a plugin
// process or in the host, and the typed errors a call can end with.
package component

import (
	"context"
	"encoding/json"
	"iter"
)

// Tool is a callable tool. Input and output are JSON documents.
type Tool interface {
	Call(ctx context.Context, input json.RawMessage) (json.RawMessage, error)
}

// Agent solves one task instance.
type Agent interface {
	Run(ctx context.Context, instance json.RawMessage) (json.RawMessage, error)
}

// Task supplies instances and scores an agent's output on one.
type Task interface {
	// Instances yields every instance for the given JSON arguments; a
	// failure is yielded as the final error.
	Instances(ctx context.Context, args json.RawMessage) iter.Seq2[Instance, error]
	Evaluate(ctx context.Context, args json.RawMessage, inst Instance, output json.RawMessage) (Result, error)
}

// Instance is one problem of a task.
type Instance struct {
	ID   string          `json:"id"`
	Data json.RawMessage `json:"data"`
}

// Result is a task's verdict on one output.
type Result struct {
	Score   float64         `json:"score"`
	Passed  bool            `json:"passed"`
	Details json.RawMessage `json:"details,omitempty"`
}

// ToolFunc adapts a function to Tool.
type ToolFunc func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// Call calls f.
func (f ToolFunc) Call(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
	return f(ctx, input)
}

// AgentFunc adapts a function to Agent.
type AgentFunc func(ctx context.Context, instance json.RawMessage) (json.RawMessage, error)

// Run calls f.
func (f AgentFunc) Run(ctx context.Context, instance json.RawMessage) (json.RawMessage, error) {
	return f(ctx, instance)
}

// Interface guards.
var (
	_ Tool  = ToolFunc(nil)
	_ Agent = AgentFunc(nil)
)

// Origin describes the plugin process behind a component, for traces and
// run records.
type Origin struct {
	// SHA256 is the hex digest of the plugin binary.
	SHA256 string
	// Protocol is the negotiated wire protocol version.
	Protocol int
	PID      int
}
