package validate_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/host/validate"
	"github.com/nexus-eval/nexus/manifest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// schema exercises every location the errors must point into: a nested
// object, array items, tuple items, enum, minimum, required and
// additionalProperties at several depths.
const schema = `{
  "type": "object",
  "properties": {
    "values": {"type": "array", "items": {"type": "number", "minimum": 0}},
    "opts": {
      "type": "object",
      "properties": {
        "mode": {"enum": ["fast", "slow"]},
        "deep": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
      },
      "additionalProperties": false
    },
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]},
    "text": {"type": "string"}
  },
  "required": ["values"],
  "additionalProperties": false
}`

// countingTool echoes its input (or returns out when set) and counts calls.
type countingTool struct {
	calls atomic.Int64
	out   string
}

func (c *countingTool) Call(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
	c.calls.Add(1)
	if c.out != "" {
		return json.RawMessage(c.out), nil
	}
	return in, nil
}

func toolWith(t *testing.T, plugin, in, out string, impl component.Tool) component.Tool {
	t.Helper()
	r := registry.New[component.Tool](manifest.KindTool)
	r.Use(validate.New().Tools())
	meta := registry.Meta{Plugin: plugin, Version: "1.0.0", Component: manifest.Component{Name: "t", InputSchema: in, OutputSchema: out}}
	if err := r.Register(meta, impl); err != nil {
		t.Fatal(err)
	}
	tool, err := r.Get(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// where is the part of a validation error the tests compare.
type where struct {
	Kind, Plugin, Component, Document string
	Pointer, Keyword, Value           string
}

func whereOf(t *testing.T, err error) where {
	t.Helper()
	var ve *validate.Error
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v (%T), want a *validate.Error", err, err)
	}
	return where{ve.Kind, ve.Plugin, ve.Component, ve.Document, ve.Pointer, ve.Keyword, ve.Value}
}

func TestInvalidInputNeverReachesTheTool(t *testing.T) {
	t.Parallel()
	in := func(ptr, kw, val string) where {
		return where{Kind: "tool", Plugin: "acme", Component: "t", Document: "input", Pointer: ptr, Keyword: kw, Value: val}
	}
	tests := []struct {
		name  string
		input string
		want  where
		// wantMsg are substrings of the error message.
		wantMsg []string
	}{
		{
			name: "array item below minimum", input: `{"values": [1, 2, -3]}`,
			want: in("/values/2", "minimum", "-3"), wantMsg: []string{`tool "acme/t"`, "invalid input at /values/2", "(value -3)"},
		},
		{
			name: "array item of the wrong type", input: `{"values": [1, "two"]}`,
			want: in("/values/1", "type", `"two"`), wantMsg: []string{"at /values/1", `want "number"`},
		},
		{
			name: "missing required property", input: `{}`,
			want: in("", "required", "{}"), wantMsg: []string{"at (root)", `"values"`},
		},
		{
			name: "root of the wrong type", input: `[1]`,
			want: in("", "type", "[1]"), wantMsg: []string{"at (root)"},
		},
		{
			name: "additional property at the root", input: `{"values": [], "colour": "red"}`,
			want: in("/colour", "additionalProperties", `"red"`), wantMsg: []string{"at /colour", "colour"},
		},
		{
			name: "additional property nested, name needing escape", input: `{"values": [], "opts": {"a/b~c": true}}`,
			want: in("/opts/a~1b~0c", "additionalProperties", "true"), wantMsg: []string{"at /opts/a~1b~0c"},
		},
		{
			name: "enum in a nested object", input: `{"values": [], "opts": {"mode": "medium"}}`,
			want: in("/opts/mode", "enum", `"medium"`), wantMsg: []string{"at /opts/mode", "medium"},
		},
		{
			name: "required two levels down", input: `{"values": [], "opts": {"deep": {}}}`,
			want: in("/opts/deep", "required", "{}"), wantMsg: []string{"at /opts/deep", `"n"`},
		},
		{
			name: "integer two levels down", input: `{"values": [], "opts": {"deep": {"n": 1.5}}}`,
			want: in("/opts/deep/n", "type", "1.5"), wantMsg: []string{"at /opts/deep/n", `want "integer"`},
		},
		{
			name: "tuple item", input: `{"values": [], "pair": ["a", "b"]}`,
			want: in("/pair/1", "type", `"b"`), wantMsg: []string{"at /pair/1"},
		},
		{
			name: "malformed JSON", input: `{"values": [1,`,
			want: in("", "json", ""), wantMsg: []string{"not valid JSON"},
		},
		{
			name: "empty input is null", input: ``,
			want: in("", "type", "null"), wantMsg: []string{`want "object"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			impl := &countingTool{}
			tool := toolWith(t, "acme", schema, schema, impl)
			out, err := tool.Call(context.Background(), json.RawMessage(tt.input))
			if err == nil {
				t.Fatalf("input %s accepted, output %s", tt.input, out)
			}
			if n := impl.calls.Load(); n != 0 {
				t.Errorf("the tool ran %d times on invalid input, want 0", n)
			}
			if !errors.Is(err, validate.ErrInvalidInput) || errors.Is(err, validate.ErrInvalidOutput) {
				t.Errorf("errors.Is: input %v, output %v; want input only", errors.Is(err, validate.ErrInvalidInput), errors.Is(err, validate.ErrInvalidOutput))
			}
			if diff := cmp.Diff(tt.want, whereOf(t, err)); diff != "" {
				t.Errorf("error location (-want +got):\n%s", diff)
			}
			for _, w := range tt.wantMsg {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message does not contain %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "bug in plugin") {
				t.Errorf("invalid input blamed on the plugin: %v", err)
			}
		})
	}
}

func TestValidInputReachesTheToolOnce(t *testing.T) {
	t.Parallel()
	impl := &countingTool{}
	tool := toolWith(t, "acme", schema, schema, impl)
	input := `{"values": [0, 1.5], "opts": {"mode": "fast", "deep": {"n": 2}}, "pair": ["a", 1]}`
	out, err := tool.Call(context.Background(), json.RawMessage(input))
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != input {
		t.Errorf("output = %s, want the input back", out)
	}
	if n := impl.calls.Load(); n != 1 {
		t.Errorf("tool ran %d times, want 1", n)
	}
}

func TestLongValuesAreShortened(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		value string
	}{
		{"ascii", strings.Repeat("a", 100_000)},
		// Three-byte runes: a byte cut would split one.
		{"multibyte", strings.Repeat("€", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			impl := &countingTool{}
			tool := toolWith(t, "acme", schema, schema, impl)
			input, _ := json.Marshal(map[string]any{"values": tt.value})
			_, err := tool.Call(context.Background(), input)
			got := whereOf(t, err)
			if got.Pointer != "/values" || got.Keyword != "type" {
				t.Errorf("at %q keyword %q, want /values type", got.Pointer, got.Keyword)
			}
			if len(got.Value) > 80 || !strings.HasSuffix(got.Value, "…") || !strings.HasPrefix(got.Value, `"`+tt.value[:3]) {
				t.Errorf("value %q (%d bytes): want at most 80 bytes, the start of the value and an ellipsis", got.Value, len(got.Value))
			}
			if !utf8.ValidString(got.Value) {
				t.Errorf("shortened value %q is not valid UTF-8", got.Value)
			}
			// The whole message must stay readable, not repeat the value.
			if msg := err.Error(); len(msg) > 500 || !utf8.ValidString(msg) {
				t.Errorf("message of %d bytes (valid UTF-8: %v), want a short one:\n%.600s", len(msg), utf8.ValidString(msg), msg)
			}
			if n := impl.calls.Load(); n != 0 {
				t.Errorf("the tool ran %d times", n)
			}
		})
	}
}

func TestShortValueIsNotCut(t *testing.T) {
	t.Parallel()
	tool := toolWith(t, "acme", schema, schema, &countingTool{})
	v := strings.Repeat("b", 78) // 80 bytes with its quotes
	input, _ := json.Marshal(map[string]any{"values": v})
	_, err := tool.Call(context.Background(), input)
	if got := whereOf(t, err).Value; got != `"`+v+`"` {
		t.Errorf("value = %q, want the whole 80-byte value", got)
	}
}

func TestInvalidOutputIsThePluginsBug(t *testing.T) {
	t.Parallel()
	out := func(ptr, kw, val string) where {
		return where{Kind: "tool", Plugin: "shady", Component: "t", Document: "output", Pointer: ptr, Keyword: kw, Value: val}
	}
	tests := []struct {
		name   string
		output string
		want   where
	}{
		{"wrong type", `{"values": "nope"}`, out("/values", "type", `"nope"`)},
		{"missing required", `{"text": "x"}`, out("", "required", `{"text":"x"}`)},
		{"negative item", `{"values": [5, -1]}`, out("/values/1", "minimum", "-1")},
		{"not JSON", `{{`, out("", "json", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			impl := &countingTool{out: tt.output}
			tool := toolWith(t, "shady", `{"type": "object"}`, schema, impl)
			got, err := tool.Call(context.Background(), json.RawMessage(`{}`))
			if err == nil {
				t.Fatalf("invalid output %s accepted as %s", tt.output, got)
			}
			if got != nil {
				t.Errorf("output %s returned with the error, want none", got)
			}
			if n := impl.calls.Load(); n != 1 {
				t.Errorf("tool ran %d times, want 1", n)
			}
			if !errors.Is(err, validate.ErrInvalidOutput) || errors.Is(err, validate.ErrInvalidInput) {
				t.Errorf("errors.Is: output %v, input %v; want output only", errors.Is(err, validate.ErrInvalidOutput), errors.Is(err, validate.ErrInvalidInput))
			}
			if diff := cmp.Diff(tt.want, whereOf(t, err)); diff != "" {
				t.Errorf("error location (-want +got):\n%s", diff)
			}
			for _, w := range []string{`tool "shady/t"`, "invalid output", `bug in plugin "shady"`, "not in the call"} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestComponentErrorsPassThrough(t *testing.T) {
	t.Parallel()
	want := &component.Error{Plugin: "acme", Kind: "tool", Component: "t", Code: "nope", Message: "refused"}
	tool := toolWith(t, "acme", schema, schema, component.ToolFunc(func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`not even JSON`), want
	}))
	_, err := tool.Call(context.Background(), json.RawMessage(`{"values": []}`))
	if err != want {
		t.Errorf("err = %v, want the component's own error, its output unchecked", err)
	}
}

func TestBooleanAndMissingSchemas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, out string
		input         string
		wantErr       error
	}{
		{name: "true accepts anything", in: `true`, out: `true`, input: `[1, "x"]`},
		{name: "false rejects everything", in: `false`, out: `true`, input: `{}`, wantErr: validate.ErrInvalidInput},
		{name: "no schema constrains nothing", in: ``, out: ``, input: `"anything"`},
		{name: "false output schema", in: `true`, out: `false`, input: `{}`, wantErr: validate.ErrInvalidOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tool := toolWith(t, "acme", tt.in, tt.out, &countingTool{})
			_, err := tool.Call(context.Background(), json.RawMessage(tt.input))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
		})
	}
}

func TestUncompilableSchemaFailsEveryCall(t *testing.T) {
	t.Parallel()
	impl := &countingTool{}
	// Valid JSON, but "type" must be a string or an array of strings.
	tool := toolWith(t, "acme", `{"type": 12}`, `true`, impl)
	for range 2 {
		_, err := tool.Call(context.Background(), json.RawMessage(`{}`))
		if err == nil || !strings.Contains(err.Error(), "does not compile") || !strings.Contains(err.Error(), "nexus-host validate") || !strings.Contains(err.Error(), `"acme/t"`) {
			t.Errorf("err = %v, want a compile error naming acme/t and `nexus-host validate`", err)
		}
	}
	if n := impl.calls.Load(); n != 0 {
		t.Errorf("tool ran %d times behind a broken schema", n)
	}
}

func TestAgent(t *testing.T) {
	t.Parallel()
	const in = `{"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}`
	const out = `{"type": "object", "properties": {"answer": {"type": "integer", "minimum": 0}}, "required": ["answer"]}`
	tests := []struct {
		name      string
		instance  string
		answer    string
		wantErr   error
		wantWhere where
		wantRuns  int64
	}{
		{name: "valid", instance: `{"question": "?"}`, answer: `{"answer": 3}`, wantRuns: 1},
		{
			name: "invalid instance", instance: `{"question": 7}`, answer: `{"answer": 3}`,
			wantErr:   validate.ErrInvalidInput,
			wantWhere: where{"agent", "bots", "a", "input", "/question", "type", "7"},
		},
		{
			name: "invalid answer", instance: `{"question": "?"}`, answer: `{"answer": -2}`,
			wantErr:   validate.ErrInvalidOutput,
			wantWhere: where{"agent", "bots", "a", "output", "/answer", "minimum", "-2"},
			wantRuns:  1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var runs atomic.Int64
			r := registry.New[component.Agent](manifest.KindAgent)
			r.Use(validate.New().Agents())
			err := r.Register(registry.Meta{Plugin: "bots", Component: manifest.Component{Name: "a", InputSchema: in, OutputSchema: out}},
				component.AgentFunc(func(context.Context, json.RawMessage) (json.RawMessage, error) {
					runs.Add(1)
					return json.RawMessage(tt.answer), nil
				}))
			if err != nil {
				t.Fatal(err)
			}
			agent, err := r.Get(context.Background(), "a")
			if err != nil {
				t.Fatal(err)
			}
			_, err = agent.Run(context.Background(), json.RawMessage(tt.instance))
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if diff := cmp.Diff(tt.wantWhere, whereOf(t, err)); diff != "" {
					t.Errorf("error location (-want +got):\n%s", diff)
				}
			}
			if n := runs.Load(); n != tt.wantRuns {
				t.Errorf("agent ran %d times, want %d", n, tt.wantRuns)
			}
		})
	}
}

// fakeTask records what reaches it.
type fakeTask struct {
	instances, evaluations atomic.Int64
	lastArgs               atomic.Value // string
}

func (f *fakeTask) Instances(_ context.Context, args json.RawMessage) iter.Seq2[component.Instance, error] {
	f.instances.Add(1)
	f.lastArgs.Store(string(args))
	return func(yield func(component.Instance, error) bool) {
		for _, id := range []string{"i0", "i1"} {
			if !yield(component.Instance{ID: id, Data: json.RawMessage(`{}`)}, nil) {
				return
			}
		}
	}
}

func (f *fakeTask) Evaluate(context.Context, json.RawMessage, component.Instance, json.RawMessage) (component.Result, error) {
	f.evaluations.Add(1)
	return component.Result{Score: 1, Passed: true}, nil
}

func taskWith(t *testing.T, impl component.Task) component.Task {
	t.Helper()
	r := registry.New[component.Task](manifest.KindTask)
	r.Use(validate.New().Tasks())
	const args = `{"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}, "additionalProperties": false}`
	const out = `{"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}`
	if err := r.Register(registry.Meta{Plugin: "tasks", Component: manifest.Component{Name: "k", InputSchema: args, OutputSchema: out}}, impl); err != nil {
		t.Fatal(err)
	}
	task, err := r.Get(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTaskArgumentsValidatedInInstances(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		args      string
		wantIDs   []string
		wantErr   bool
		wantWhere where
		wantArgs  string // what reached the task
	}{
		{name: "valid", args: `{"n": 2}`, wantIDs: []string{"i0", "i1"}, wantArgs: `{"n": 2}`},
		{name: "no arguments are an empty object", args: ``, wantIDs: []string{"i0", "i1"}, wantArgs: `{}`},
		{
			name: "below minimum", args: `{"n": 0}`, wantErr: true,
			wantWhere: where{"task", "tasks", "k", "task arguments", "/n", "minimum", "0"},
		},
		{
			name: "unknown argument", args: `{"seed": 7}`, wantErr: true,
			wantWhere: where{"task", "tasks", "k", "task arguments", "/seed", "additionalProperties", "7"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			impl := &fakeTask{}
			task := taskWith(t, impl)
			var ids []string
			var errs []error
			for inst, err := range task.Instances(context.Background(), json.RawMessage(tt.args)) {
				if err != nil {
					errs = append(errs, err)
					continue
				}
				ids = append(ids, inst.ID)
			}
			if diff := cmp.Diff(tt.wantIDs, ids); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
			if !tt.wantErr {
				if len(errs) != 0 {
					t.Fatalf("errors %v", errs)
				}
				if got := impl.lastArgs.Load(); got != tt.wantArgs {
					t.Errorf("task got args %v, want %s", got, tt.wantArgs)
				}
				return
			}
			if len(errs) != 1 || !errors.Is(errs[0], validate.ErrInvalidInput) {
				t.Fatalf("errors %v, want one ErrInvalidInput", errs)
			}
			if diff := cmp.Diff(tt.wantWhere, whereOf(t, errs[0])); diff != "" {
				t.Errorf("error location (-want +got):\n%s", diff)
			}
			if n := impl.instances.Load(); n != 0 {
				t.Errorf("task's Instances ran %d times on invalid arguments", n)
			}
		})
	}
}

func TestTaskAgentOutputValidatedInEvaluate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		output    string
		wantErr   bool
		wantWhere where
	}{
		{name: "valid", output: `{"answer": "42"}`},
		{
			name: "answer of the wrong type", output: `{"answer": 42}`, wantErr: true,
			wantWhere: where{"task", "tasks", "k", "agent output", "/answer", "type", "42"},
		},
		{
			name: "not JSON", output: `42}`, wantErr: true,
			wantWhere: where{"task", "tasks", "k", "agent output", "", "json", ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			impl := &fakeTask{}
			task := taskWith(t, impl)
			res, err := task.Evaluate(context.Background(), json.RawMessage(`{}`), component.Instance{ID: "i0"}, json.RawMessage(tt.output))
			if !tt.wantErr {
				if err != nil || !res.Passed || impl.evaluations.Load() != 1 {
					t.Fatalf("res %+v err %v after %d evaluations, want a pass from one evaluation", res, err, impl.evaluations.Load())
				}
				return
			}
			// The agent's output is the evaluation's input: the agent's
			// fault, reported as invalid input, and the task is not asked.
			if !errors.Is(err, validate.ErrInvalidInput) {
				t.Fatalf("err = %v, want ErrInvalidInput", err)
			}
			if diff := cmp.Diff(tt.wantWhere, whereOf(t, err)); diff != "" {
				t.Errorf("error location (-want +got):\n%s", diff)
			}
			if n := impl.evaluations.Load(); n != 0 {
				t.Errorf("task evaluated %d times an output it cannot read", n)
			}
		})
	}
}
