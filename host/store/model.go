package store

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Run statuses.
const (
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusInterrupted = "interrupted"
	StatusFailed      = "failed"
)

// Error classes of an instance result. The empty class means the instance
// ran to a score (passed or not).
const (
	ErrorNone      = ""
	ErrorAgent     = "agent_error"
	ErrorTask      = "task_error"
	ErrorInfra     = "infra_error"
	ErrorTimeout   = "timeout"
	ErrorCancelled = "cancelled"
)

// Step kinds.
const (
	KindLLM  = "llm"
	KindTool = "tool"
)

var (
	statuses     = []string{StatusRunning, StatusCompleted, StatusInterrupted, StatusFailed}
	errorClasses = []string{ErrorNone, ErrorAgent, ErrorTask, ErrorInfra, ErrorTimeout, ErrorCancelled}
	stepKinds    = []string{KindLLM, KindTool}
)

// Retryable reports whether a result with this error class is re-run on
// resume: infra errors, timeouts and cancellations say nothing about the
// agent, so they are tried again; every other result stands.
func Retryable(errorClass string) bool {
	switch errorClass {
	case ErrorInfra, ErrorTimeout, ErrorCancelled:
		return true
	}
	return false
}

// PluginRef identifies one plugin binary a run used.
type PluginRef struct {
	Name     string `json:"name"`
	Version  string `json:"version,omitempty"`
	SHA256   string `json:"sha256"`
	Protocol int    `json:"protocol"`
}

// Run is one evaluation run: a task, an agent, and everything that
// determines its results.
type Run struct {
	// ID is sortable by creation time (see NewRunID); CreateRun fills it
	// when empty.
	ID              string          `json:"id"`
	Task            string          `json:"task"`
	Agent           string          `json:"agent"`
	TaskArgs        json.RawMessage `json:"task_args,omitempty"`
	DatasetRevision string          `json:"dataset_revision,omitempty"`
	// LLM is the public LLM configuration (model, temperature, ...); never
	// API keys or other secrets: CreateRun refuses secret-looking keys.
	LLM            json.RawMessage `json:"llm,omitempty"`
	Plugins        []PluginRef     `json:"plugins,omitempty"`
	HostVersion    string          `json:"host_version,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Status is one of the Status constants; CreateRun defaults it to
	// StatusRunning.
	Status    string    `json:"status"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"`
	// Total is the number of instances known (the task may stream them).
	Total int `json:"total"`
}

// Usage counts LLM tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns u + v.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + v.PromptTokens,
		CompletionTokens: u.CompletionTokens + v.CompletionTokens,
		TotalTokens:      u.TotalTokens + v.TotalTokens,
	}
}

// InstanceResult is the outcome of one instance of a run.
type InstanceResult struct {
	RunID      string          `json:"run_id"`
	InstanceID string          `json:"instance_id"`
	Passed     bool            `json:"passed"`
	Score      float64         `json:"score"`
	Output     json.RawMessage `json:"output,omitempty"`
	Details    json.RawMessage `json:"details,omitempty"`
	// ErrorClass is one of the Error constants; empty when the instance
	// was scored.
	ErrorClass string    `json:"error_class"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	Usage      Usage     `json:"usage"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	EndedAt    time.Time `json:"ended_at,omitzero"`
}

// Step is one LLM or tool call of an instance's trajectory.
type Step struct {
	RunID      string `json:"run_id"`
	InstanceID string `json:"instance_id"`
	// Seq orders the steps of an instance; 0 means "its position in the
	// slice given to RecordInstance, from 1".
	Seq        int             `json:"seq"`
	Kind       string          `json:"kind"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input,omitempty"`
	Output     json.RawMessage `json:"output,omitempty"`
	Error      string          `json:"error,omitempty"`
	Usage      Usage           `json:"usage"`
	StartedAt  time.Time       `json:"started_at,omitzero"`
	DurationMS int64           `json:"duration_ms"`
}

// RunSummary is a run with the counts of its recorded results.
type RunSummary struct {
	Run
	// Recorded is the number of instances with a result.
	Recorded int `json:"recorded"`
	// Passed and Failed count scored instances; Errored counts the ones
	// that ended in an error class, broken down in Errors.
	Passed  int            `json:"passed"`
	Failed  int            `json:"failed"`
	Errored int            `json:"errored"`
	Errors  map[string]int `json:"errors,omitempty"`
}

// NewRunID returns a run id that sorts by t (to the millisecond) and is
// unique with overwhelming probability: "20260102T150405.123Z-1a2b3c4d".
func NewRunID(t time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return t.UTC().Format("20060102T150405.000Z") + "-" + hex.EncodeToString(b[:])
}

func oneOf(what, v string, allowed []string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	var q []string
	for _, a := range allowed {
		q = append(q, fmt.Sprintf("%q", a))
	}
	return fmt.Errorf("%s %q is not one of %s", what, v, strings.Join(q, ", "))
}

func validJSON(what string, raw json.RawMessage) error {
	if raw != nil && !json.Valid(raw) {
		return fmt.Errorf("%s is not valid JSON", what)
	}
	return nil
}

// secretKeys are the LLM config keys that hold secrets; they must not be
// stored (the database is shared, exported and attached to bug reports).
var secretKeys = map[string]bool{
	"api_key": true, "apikey": true, "secret": true, "client_secret": true,
	"password": true, "passwd": true, "authorization": true, "auth_token": true,
	"access_token": true, "refresh_token": true, "bearer_token": true, "token": true,
	"private_key": true, "credentials": true,
}

// findSecret returns the JSON path of the first secret-looking key in raw.
func findSecret(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	var walk func(path string, v any) string
	walk = func(path string, v any) string {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				n := strings.ReplaceAll(strings.ToLower(k), "-", "_")
				if secretKeys[n] || strings.HasSuffix(n, "_api_key") || strings.HasSuffix(n, "_secret") || strings.HasSuffix(n, "_password") {
					if s, ok := e.(string); !ok || s != "" {
						return path + "/" + k
					}
				}
				if p := walk(path+"/"+k, e); p != "" {
					return p
				}
			}
		case []any:
			for i, e := range v {
				if p := walk(fmt.Sprintf("%s/%d", path, i), e); p != "" {
					return p
				}
			}
		}
		return ""
	}
	return walk("", v)
}

func (r *Run) validate() error {
	if r.Task == "" {
		return fmt.Errorf("run has no task")
	}
	if r.Agent == "" {
		return fmt.Errorf("run has no agent")
	}
	if err := oneOf("run status", r.Status, statuses); err != nil {
		return err
	}
	if err := validJSON("task args", r.TaskArgs); err != nil {
		return err
	}
	if err := validJSON("llm config", r.LLM); err != nil {
		return err
	}
	if p := findSecret(r.LLM); p != "" {
		return fmt.Errorf("llm config holds a secret at %s: store only the public config (model, parameters), never keys", p)
	}
	return nil
}

func (res *InstanceResult) validate() error {
	if res.RunID == "" {
		return fmt.Errorf("instance result has no run id")
	}
	if res.InstanceID == "" {
		return fmt.Errorf("instance result has no instance id")
	}
	if err := oneOf("error class", res.ErrorClass, errorClasses); err != nil {
		return err
	}
	if res.Passed && res.ErrorClass != ErrorNone {
		return fmt.Errorf("instance passed with error class %q: an instance that errored cannot pass", res.ErrorClass)
	}
	if err := validJSON("output", res.Output); err != nil {
		return err
	}
	return validJSON("details", res.Details)
}

func (s *Step) validate(res *InstanceResult) error {
	if s.RunID != "" && s.RunID != res.RunID || s.InstanceID != "" && s.InstanceID != res.InstanceID {
		return fmt.Errorf("step %d belongs to run %q instance %q, not to this instance", s.Seq, s.RunID, s.InstanceID)
	}
	if err := oneOf("step kind", s.Kind, stepKinds); err != nil {
		return fmt.Errorf("step %d: %w", s.Seq, err)
	}
	if err := validJSON("input", s.Input); err != nil {
		return fmt.Errorf("step %d: %w", s.Seq, err)
	}
	if err := validJSON("output", s.Output); err != nil {
		return fmt.Errorf("step %d: %w", s.Seq, err)
	}
	return nil
}
