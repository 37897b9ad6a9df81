package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// ATIFSchemaVersion is the version of Harbor's Agent Trajectory Interchange
// Format the ATIF export follows: the ATIF RFC
// (harbor-framework/harbor, rfcs/0001-trajectory-format.md, "Changelog
// v1.7", April 2026) and its Pydantic models
// (src/harbor/models/trajectories/). Field names below are the RFC's.
// Harbor's models for ATIF-v1.8 still accept "ATIF-v1.7" documents; v1.8
// added audio content parts, which this text-only export never emits.
const ATIFSchemaVersion = "ATIF-v1.7"

// ATIF document types (RFC section II). Optional fields are omitted when
// empty, as Harbor's to_json_dict(exclude_none=True) does.
type (
	atifTrajectory struct {
		SchemaVersion string            `json:"schema_version"`
		SessionID     string            `json:"session_id,omitempty"`
		TrajectoryID  string            `json:"trajectory_id,omitempty"`
		Agent         atifAgent         `json:"agent"`
		Steps         []atifStep        `json:"steps"`
		Notes         string            `json:"notes,omitempty"`
		FinalMetrics  *atifFinalMetrics `json:"final_metrics,omitempty"`
		Extra         map[string]any    `json:"extra,omitempty"`
	}
	atifAgent struct {
		Name      string         `json:"name"`
		Version   string         `json:"version"`
		ModelName string         `json:"model_name,omitempty"`
		Extra     map[string]any `json:"extra,omitempty"`
	}
	atifStep struct {
		StepID       int              `json:"step_id"`
		Timestamp    string           `json:"timestamp,omitempty"`
		Source       string           `json:"source"` // "system", "user" or "agent"
		ModelName    string           `json:"model_name,omitempty"`
		Message      string           `json:"message"`
		ToolCalls    []atifToolCall   `json:"tool_calls,omitempty"`
		Observation  *atifObservation `json:"observation,omitempty"`
		Metrics      *atifMetrics     `json:"metrics,omitempty"`
		LLMCallCount *int             `json:"llm_call_count,omitempty"`
		Extra        map[string]any   `json:"extra,omitempty"`
	}
	atifToolCall struct {
		ToolCallID   string          `json:"tool_call_id"`
		FunctionName string          `json:"function_name"`
		Arguments    json.RawMessage `json:"arguments"`
		Extra        map[string]any  `json:"extra,omitempty"`
	}
	atifObservation struct {
		Results []atifObservationResult `json:"results"`
	}
	atifObservationResult struct {
		SourceCallID string         `json:"source_call_id,omitempty"`
		Content      *string        `json:"content,omitempty"`
		Extra        map[string]any `json:"extra,omitempty"`
	}
	atifMetrics struct {
		PromptTokens     *int           `json:"prompt_tokens,omitempty"`
		CompletionTokens *int           `json:"completion_tokens,omitempty"`
		Extra            map[string]any `json:"extra,omitempty"`
	}
	atifFinalMetrics struct {
		TotalPromptTokens     *int           `json:"total_prompt_tokens,omitempty"`
		TotalCompletionTokens *int           `json:"total_completion_tokens,omitempty"`
		TotalSteps            *int           `json:"total_steps,omitempty"`
		Extra                 map[string]any `json:"extra,omitempty"`
	}
)

// ExportATIF writes one ATIF trajectory per instance of a run, one JSON
// document per line, in instance id order. Each line is a complete
// trajectory, as Harbor's trajectory.json holds for one trial.
//
// Mapping: session_id is the run id (ATIF session ids are run-scoped);
// trajectory_id is "<run id>/<instance id>"; agent is the run's agent (its
// plugin's version, else the host version); every recorded LLM call is an
// agent step with llm_call_count 1, its output as the message and its
// token usage as metrics; every tool call is an agent step with
// llm_call_count 0 (no inference of its own) holding one tool_call and the
// matching observation. The score, pass/fail, error and the run's
// provenance are in the root extra. An instance without recorded calls
// gets one system step saying so (ATIF requires at least one step).
func (s *Store) ExportATIF(ctx context.Context, w io.Writer, runID string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return s.eachInstance(ctx, "export run "+runID+" as atif", runID, func(r *Run, in InstanceResult, st []Step) error {
		if err := enc.Encode(atifFor(r, in, st)); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}

// ExportATIFInstance writes the ATIF trajectory of one instance as one
// indented JSON document (a trajectory.json).
func (s *Store) ExportATIFInstance(ctx context.Context, w io.Writer, runID, instanceID string) error {
	return s.readTx(ctx, "export instance "+instanceID+" of run "+runID+" as atif", func(tx *sql.Tx) error {
		r, err := getRun(ctx, tx, `WHERE id = ?`, runID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", runID)
		}
		if err != nil {
			return err
		}
		in, err := scanInstance(tx.QueryRowContext(ctx, `SELECT `+instanceColumns+` FROM instances
			WHERE run_id = ? AND instance_id = ?`, runID, instanceID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("instance %q: %w", instanceID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		st, err := steps(ctx, tx, runID, instanceID)
		if err != nil {
			return err
		}
		b, err := json.MarshalIndent(atifFor(r, in, st), "", "  ")
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}

// atifTime formats t as ISO 8601 in UTC with microseconds (what Python's
// datetime.fromisoformat, which Harbor's validator uses, reads).
func atifTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}

func intp(n int) *int { return &n }

// jsonText returns a JSON string's value, or the compact JSON text of any
// other value; "" for no value.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// llmMessage extracts the assistant text of an LLM call's output: a JSON
// string, or the "content"/"text"/"message" string of an object (with the
// OpenAI-style {"choices":[{"message":{"content":...}}]} looked into);
// otherwise the output's JSON text.
func llmMessage(raw json.RawMessage) string {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return jsonText(raw)
	}
	var pick func(v any, depth int) (string, bool)
	pick = func(v any, depth int) (string, bool) {
		switch v := v.(type) {
		case string:
			return v, true
		case map[string]any:
			if depth > 3 {
				return "", false
			}
			for _, k := range []string{"content", "text", "message"} {
				if s, ok := pick(v[k], depth+1); ok {
					return s, true
				}
			}
			if cs, ok := v["choices"].([]any); ok && len(cs) > 0 {
				return pick(cs[0], depth+1)
			}
		}
		return "", false
	}
	if s, ok := pick(v, 0); ok {
		return s
	}
	return jsonText(raw)
}

// stringField returns raw's top-level string field key, if any.
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

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil
}

func optJSON(m map[string]any, key string, raw json.RawMessage) {
	if len(raw) > 0 {
		m[key] = raw
	}
}

func atifFor(r *Run, in InstanceResult, st []Step) atifTrajectory {
	agentVersion := r.HostVersion
	for _, p := range r.Plugins {
		if p.Name == r.Agent && p.Version != "" {
			agentVersion = p.Version
		}
	}
	if agentVersion == "" {
		agentVersion = "unknown"
	}
	t := atifTrajectory{
		SchemaVersion: ATIFSchemaVersion,
		SessionID:     r.ID,
		TrajectoryID:  r.ID + "/" + in.InstanceID,
		Agent: atifAgent{
			Name:      r.Agent,
			Version:   agentVersion,
			ModelName: stringField(r.LLM, "model"),
		},
	}
	if len(r.LLM) > 0 {
		t.Agent.Extra = map[string]any{"llm": r.LLM}
	}
	var prompt, completion int
	llmUsage := false
	for i, s := range st {
		step := atifStep{
			StepID:    i + 1,
			Timestamp: atifTime(s.StartedAt),
			Source:    "agent",
			Extra:     map[string]any{"nexus_kind": s.Kind, "nexus_seq": s.Seq, "duration_ms": s.DurationMS},
		}
		if s.Error != "" {
			step.Extra["error"] = s.Error
		}
		switch s.Kind {
		case KindLLM:
			step.LLMCallCount = intp(1)
			step.Message = llmMessage(s.Output)
			step.ModelName = stringField(s.Input, "model")
			if s.Name != "" {
				step.Extra["llm"] = s.Name
			}
			optJSON(step.Extra, "input", s.Input)
			optJSON(step.Extra, "output", s.Output)
			if s.Usage != (Usage{}) {
				llmUsage = true
				prompt += s.Usage.PromptTokens
				completion += s.Usage.CompletionTokens
				step.Metrics = &atifMetrics{
					PromptTokens:     intp(s.Usage.PromptTokens),
					CompletionTokens: intp(s.Usage.CompletionTokens),
				}
				if s.Usage.TotalTokens != 0 {
					step.Metrics.Extra = map[string]any{"total_tokens": s.Usage.TotalTokens}
				}
			}
		default: // KindTool
			step.LLMCallCount = intp(0)
			callID := fmt.Sprintf("call_%d", s.Seq)
			call := atifToolCall{ToolCallID: callID, FunctionName: s.Name, Arguments: s.Input}
			if !isObject(s.Input) {
				// ATIF arguments must be an object.
				args, _ := json.Marshal(map[string]json.RawMessage{"input": orNull(s.Input)})
				call.Arguments = args
				call.Extra = map[string]any{"nexus_wrapped_input": true}
			}
			step.ToolCalls = []atifToolCall{call}
			res := atifObservationResult{SourceCallID: callID}
			content := jsonText(s.Output)
			if s.Error != "" {
				content = strings.TrimSpace(content + "\nerror: " + s.Error)
				res.Extra = map[string]any{"error": s.Error}
			}
			res.Content = &content
			step.Observation = &atifObservation{Results: []atifObservationResult{res}}
		}
		t.Steps = append(t.Steps, step)
	}
	if len(t.Steps) == 0 {
		t.Steps = []atifStep{{
			StepID:    1,
			Timestamp: atifTime(in.StartedAt),
			Source:    "system",
			Message:   fmt.Sprintf("nexus recorded no LLM or tool calls for instance %q of task %q", in.InstanceID, r.Task),
		}}
	}
	t.FinalMetrics = &atifFinalMetrics{TotalSteps: intp(len(t.Steps))}
	if llmUsage {
		t.FinalMetrics.TotalPromptTokens = intp(prompt)
		t.FinalMetrics.TotalCompletionTokens = intp(completion)
	}
	extra := map[string]any{
		"run_id":           r.ID,
		"task":             r.Task,
		"instance_id":      in.InstanceID,
		"passed":           in.Passed,
		"score":            in.Score,
		"error_class":      in.ErrorClass,
		"duration_ms":      in.DurationMS,
		"usage":            in.Usage,
		"dataset_revision": r.DatasetRevision,
		"host_version":     r.HostVersion,
		"idempotency_key":  r.IdempotencyKey,
	}
	if in.Error != "" {
		extra["error"] = in.Error
	}
	optJSON(extra, "task_args", r.TaskArgs)
	optJSON(extra, "output", in.Output)
	optJSON(extra, "details", in.Details)
	if len(r.Plugins) > 0 {
		extra["plugins"] = r.Plugins
	}
	t.Extra = extra
	return t
}

func orNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}
