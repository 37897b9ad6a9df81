package store

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestExportJSONL(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	ctx := t.Context()
	r := newRun(t, s, nil)
	a, b := result(r.ID, "a", "", true), result(r.ID, "b", ErrorAgent, false)
	b.Error = "agent crashed"
	if err := s.RecordInstance(ctx, b, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordInstance(ctx, a, trajectory()); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.ExportJSONL(ctx, &buf, r.ID); err != nil {
		t.Fatal(err)
	}
	var got []JSONLRecord
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		var rec JSONLRecord
		dec := json.NewDecoder(strings.NewReader(sc.Text()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, rec)
	}
	steps := trajectory()
	for i := range steps {
		steps[i].RunID, steps[i].InstanceID, steps[i].Seq = r.ID, "a", i+1
	}
	want := []JSONLRecord{
		{Task: r.Task, Agent: r.Agent, InstanceResult: a, Steps: steps},
		{Task: r.Task, Agent: r.Agent, InstanceResult: b, Steps: []Step{}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("JSONL (-want +got):\n%s", diff)
	}
	if err := s.ExportJSONL(ctx, &buf, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("export of an unknown run = %v, want ErrNotFound", err)
	}
}

// The ATIF schema as the RFC (v1.7) defines it, decoded strictly: an
// unknown field name fails the test, as Harbor's models (extra="forbid")
// fail validation.
type (
	xTrajectory struct {
		SchemaVersion          string          `json:"schema_version"`
		SessionID              *string         `json:"session_id"`
		TrajectoryID           *string         `json:"trajectory_id"`
		Agent                  *xAgent         `json:"agent"`
		Steps                  []xStep         `json:"steps"`
		Notes                  *string         `json:"notes"`
		FinalMetrics           *xFinalMetrics  `json:"final_metrics"`
		ContinuedTrajectoryRef *string         `json:"continued_trajectory_ref"`
		Extra                  map[string]any  `json:"extra"`
		SubagentTrajectories   json.RawMessage `json:"subagent_trajectories"`
	}
	xAgent struct {
		Name            string          `json:"name"`
		Version         string          `json:"version"`
		ModelName       *string         `json:"model_name"`
		ToolDefinitions json.RawMessage `json:"tool_definitions"`
		Extra           map[string]any  `json:"extra"`
	}
	xStep struct {
		StepID           int             `json:"step_id"`
		Timestamp        *string         `json:"timestamp"`
		Source           string          `json:"source"`
		ModelName        *string         `json:"model_name"`
		ReasoningEffort  json.RawMessage `json:"reasoning_effort"`
		Message          *string         `json:"message"`
		ReasoningContent *string         `json:"reasoning_content"`
		ToolCalls        []xToolCall     `json:"tool_calls"`
		Observation      *xObservation   `json:"observation"`
		Metrics          *xMetrics       `json:"metrics"`
		Extra            map[string]any  `json:"extra"`
		LLMCallCount     *int            `json:"llm_call_count"`
		IsCopiedContext  *bool           `json:"is_copied_context"`
	}
	xToolCall struct {
		ToolCallID   string         `json:"tool_call_id"`
		FunctionName string         `json:"function_name"`
		Arguments    map[string]any `json:"arguments"`
		Extra        map[string]any `json:"extra"`
	}
	xObservation struct {
		Results []xResult `json:"results"`
	}
	xResult struct {
		SourceCallID          *string         `json:"source_call_id"`
		Content               *string         `json:"content"`
		SubagentTrajectoryRef json.RawMessage `json:"subagent_trajectory_ref"`
		Extra                 map[string]any  `json:"extra"`
	}
	xMetrics struct {
		PromptTokens       *int            `json:"prompt_tokens"`
		CompletionTokens   *int            `json:"completion_tokens"`
		CachedTokens       *int            `json:"cached_tokens"`
		CostUSD            *float64        `json:"cost_usd"`
		PromptTokenIDs     json.RawMessage `json:"prompt_token_ids"`
		CompletionTokenIDs json.RawMessage `json:"completion_token_ids"`
		Logprobs           json.RawMessage `json:"logprobs"`
		Extra              map[string]any  `json:"extra"`
	}
	xFinalMetrics struct {
		TotalPromptTokens     *int           `json:"total_prompt_tokens"`
		TotalCompletionTokens *int           `json:"total_completion_tokens"`
		TotalCachedTokens     *int           `json:"total_cached_tokens"`
		TotalCostUSD          *float64       `json:"total_cost_usd"`
		TotalSteps            *int           `json:"total_steps"`
		Extra                 map[string]any `json:"extra"`
	}
)

// validateATIF decodes one trajectory strictly and checks the RFC's rules
// (the ones Harbor's Pydantic validators enforce).
func validateATIF(t *testing.T, doc []byte) xTrajectory {
	t.Helper()
	var tr xTrajectory
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&tr); err != nil {
		t.Fatalf("not an ATIF trajectory: %v\n%s", err, doc)
	}
	if tr.SchemaVersion != "ATIF-v1.7" {
		t.Errorf("schema_version = %q", tr.SchemaVersion)
	}
	if tr.Agent == nil || tr.Agent.Name == "" || tr.Agent.Version == "" {
		t.Errorf("agent = %+v, want name and version", tr.Agent)
	}
	if len(tr.Steps) == 0 {
		t.Error("no steps")
	}
	for i, st := range tr.Steps {
		if st.StepID != i+1 {
			t.Errorf("steps[%d].step_id = %d, want %d", i, st.StepID, i+1)
		}
		if st.Message == nil {
			t.Errorf("step %d has no message", st.StepID)
		}
		switch st.Source {
		case "agent":
		case "system", "user":
			if st.ModelName != nil || st.ReasoningEffort != nil || st.ReasoningContent != nil || st.ToolCalls != nil || st.Metrics != nil {
				t.Errorf("step %d (%s) has agent-only fields", st.StepID, st.Source)
			}
		default:
			t.Errorf("step %d source = %q", st.StepID, st.Source)
		}
		if st.Timestamp != nil {
			if _, err := time.Parse("2006-01-02T15:04:05.999999Z07:00", *st.Timestamp); err != nil {
				t.Errorf("step %d timestamp: %v", st.StepID, err)
			}
		}
		if st.LLMCallCount != nil && *st.LLMCallCount == 0 && (st.Metrics != nil || st.ReasoningContent != nil || st.ReasoningEffort != nil) {
			t.Errorf("step %d: llm_call_count 0 with LLM fields", st.StepID)
		}
		ids := map[string]bool{}
		for _, tc := range st.ToolCalls {
			if tc.ToolCallID == "" || tc.FunctionName == "" || tc.Arguments == nil || ids[tc.ToolCallID] {
				t.Errorf("step %d: bad tool call %+v", st.StepID, tc)
			}
			ids[tc.ToolCallID] = true
		}
		if st.Observation != nil {
			if st.Observation.Results == nil {
				t.Errorf("step %d: observation without results", st.StepID)
			}
			for _, r := range st.Observation.Results {
				if r.SourceCallID != nil && !ids[*r.SourceCallID] {
					t.Errorf("step %d: source_call_id %q names no tool call of the step", st.StepID, *r.SourceCallID)
				}
			}
		}
	}
	return tr
}

func TestExportATIF(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	ctx := t.Context()
	r := newRun(t, s, nil)
	withSteps, noSteps := result(r.ID, "a", "", true), result(r.ID, "b", ErrorInfra, false)
	noSteps.Error = "sandbox failed"
	if err := s.RecordInstance(ctx, withSteps, trajectory()); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordInstance(ctx, noSteps, nil); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.ExportATIF(ctx, &buf, r.ID); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one trajectory per instance:\n%s", len(lines), buf.String())
	}
	a := validateATIF(t, []byte(lines[0]))
	b := validateATIF(t, []byte(lines[1]))

	str := func(s string) *string { return &s }
	n := func(i int) *int { return &i }
	ts := func(d time.Duration) *string { return str(t0.Add(d).Format("2006-01-02T15:04:05.000000Z")) }
	wantSteps := []xStep{
		{StepID: 1, Timestamp: ts(time.Second), Source: "agent", ModelName: str("m1"), Message: str("call the tool"),
			Metrics:      &xMetrics{PromptTokens: n(10), CompletionTokens: n(5), Extra: map[string]any{"total_tokens": 15.0}},
			LLMCallCount: n(1),
			Extra: map[string]any{"nexus_kind": "llm", "nexus_seq": 1.0, "duration_ms": 300.0, "llm": "default",
				"input":  map[string]any{"model": "m1", "messages": []any{map[string]any{"role": "user", "content": "hi"}}},
				"output": map[string]any{"content": "call the tool"}}},
		{StepID: 2, Timestamp: ts(1300 * time.Millisecond), Source: "agent", Message: str(""),
			ToolCalls:    []xToolCall{{ToolCallID: "call_2", FunctionName: "write_file", Arguments: map[string]any{"path": "a.go"}}},
			Observation:  &xObservation{Results: []xResult{{SourceCallID: str("call_2"), Content: str("ok")}}},
			LLMCallCount: n(0),
			Extra:        map[string]any{"nexus_kind": "tool", "nexus_seq": 2.0, "duration_ms": 20.0}},
		{StepID: 3, Timestamp: ts(1400 * time.Millisecond), Source: "agent", Message: str(""),
			ToolCalls: []xToolCall{{ToolCallID: "call_3", FunctionName: "run", Arguments: map[string]any{"input": "go test"},
				Extra: map[string]any{"nexus_wrapped_input": true}}},
			Observation: &xObservation{Results: []xResult{{SourceCallID: str("call_3"), Content: str("error: exit status 1"),
				Extra: map[string]any{"error": "exit status 1"}}}},
			LLMCallCount: n(0),
			Extra:        map[string]any{"nexus_kind": "tool", "nexus_seq": 3.0, "duration_ms": 900.0, "error": "exit status 1"}},
	}
	if diff := cmp.Diff(wantSteps, a.Steps); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&xAgent{Name: "oracle", Version: "1.2.3", ModelName: str("m1"),
		Extra: map[string]any{"llm": map[string]any{"model": "m1", "temperature": 0.0}}}, a.Agent); diff != "" {
		t.Errorf("agent (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&xFinalMetrics{TotalPromptTokens: n(10), TotalCompletionTokens: n(5), TotalSteps: n(3)}, a.FinalMetrics); diff != "" {
		t.Errorf("final_metrics (-want +got):\n%s", diff)
	}
	if *a.SessionID != r.ID || *a.TrajectoryID != r.ID+"/a" || a.Extra["passed"] != true || a.Extra["score"] != 1.0 || a.Extra["instance_id"] != "a" {
		t.Errorf("ids/extra = %v %v %v", *a.SessionID, *a.TrajectoryID, a.Extra)
	}

	if len(b.Steps) != 1 || b.Steps[0].Source != "system" || !strings.Contains(*b.Steps[0].Message, "no LLM or tool calls") {
		t.Errorf("trajectory without calls: steps = %+v", b.Steps)
	}
	if b.Extra["error_class"] != ErrorInfra || b.Extra["error"] != "sandbox failed" || b.FinalMetrics.TotalPromptTokens != nil {
		t.Errorf("trajectory without calls: extra = %v, final = %+v", b.Extra, b.FinalMetrics)
	}

	t.Run("one instance", func(t *testing.T) {
		t.Parallel()
		var one bytes.Buffer
		if err := s.ExportATIFInstance(ctx, &one, r.ID, "a"); err != nil {
			t.Fatal(err)
		}
		got := validateATIF(t, one.Bytes())
		if diff := cmp.Diff(a, got); diff != "" {
			t.Errorf("single export differs from the run export (-run +single):\n%s", diff)
		}
		for _, c := range []struct{ run, inst string }{{r.ID, "zzz"}, {"nope", "a"}} {
			if err := s.ExportATIFInstance(ctx, &one, c.run, c.inst); !errors.Is(err, ErrNotFound) {
				t.Errorf("ExportATIFInstance(%s, %s) = %v, want ErrNotFound", c.run, c.inst, err)
			}
		}
	})
}

func TestLLMMessage(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{``, ``},
		{`null`, ``},
		{`"plain"`, `plain`},
		{`{"content":"c"}`, `c`},
		{`{"text":"t","content":null}`, `t`},
		{`{"message":{"role":"assistant","content":"m"}}`, `m`},
		{`{"choices":[{"message":{"content":"o"}}]}`, `o`},
		{`{"tool_calls":[1]}`, `{"tool_calls":[1]}`},
		{`42`, `42`},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			t.Parallel()
			if got := llmMessage(json.RawMessage(tc.in)); got != tc.want {
				t.Errorf("llmMessage(%s) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
