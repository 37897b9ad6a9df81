package runner

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"time"

	"github.com/nexus-eval/nexus/host/store"
)

// Summary is a run and its recorded results. JSON field names are part of
// the CLI's `-o json` contract.
type Summary struct {
	RunID  string `json:"run_id"`
	Task   string `json:"task"`
	Agent  string `json:"agent"`
	Status string `json:"status"`
	// Total counts the recorded instances. Passed + Failed = Total:
	// Failed counts every instance that did not pass, Errored the ones
	// among them that ended with an error class (see Errors).
	Total   int `json:"total"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Errored int `json:"errored"`
	// Planned is the number of instances the task yielded, once a stream
	// ran to its end (or to the limit); 0 while unknown.
	Planned   int            `json:"planned,omitempty"`
	PassRate  float64        `json:"pass_rate"`
	MeanScore float64        `json:"mean_score"`
	Errors    map[string]int `json:"errors"`
	// DurationP50MS and DurationP95MS are percentiles of the instances'
	// durations (nearest rank).
	DurationP50MS int64       `json:"duration_p50_ms"`
	DurationP95MS int64       `json:"duration_p95_ms"`
	Tokens        store.Usage `json:"tokens"`

	TaskArgs        json.RawMessage   `json:"task_args,omitempty"`
	DatasetRevision string            `json:"dataset_revision,omitempty"`
	LLM             json.RawMessage   `json:"llm,omitempty"`
	Plugins         []store.PluginRef `json:"plugins,omitempty"`
	HostVersion     string            `json:"host_version,omitempty"`
	IdempotencyKey  string            `json:"idempotency_key,omitempty"`
	StartedAt       time.Time         `json:"started_at"`
	EndedAt         time.Time         `json:"ended_at,omitzero"`

	// Set by Run only: whether it resumed an earlier run, how many
	// instances it ran and skipped, and anything worth telling the user.
	Resumed bool     `json:"resumed,omitempty"`
	Ran     int      `json:"ran,omitempty"`
	Skipped int      `json:"skipped,omitempty"`
	Notes   []string `json:"notes,omitempty"`

	Instances []Instance `json:"instances"`
}

// Instance is one recorded instance result, as summaries show it.
type Instance struct {
	ID         string  `json:"id"`
	Passed     bool    `json:"passed"`
	Score      float64 `json:"score"`
	ErrorClass string  `json:"error_class"`
	Error      string  `json:"error,omitempty"`
	DurationMS int64   `json:"duration_ms"`
	Tokens     int     `json:"tokens"`
}

func instanceOf(r store.InstanceResult) Instance {
	return Instance{
		ID: r.InstanceID, Passed: r.Passed, Score: r.Score, ErrorClass: r.ErrorClass, Error: r.Error,
		DurationMS: r.DurationMS, Tokens: r.Usage.TotalTokens,
	}
}

// Load summarizes a recorded run.
func Load(ctx context.Context, st *store.Store, runID string) (*Summary, error) {
	r, err := st.GetRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	ins, err := st.Instances(ctx, runID)
	if err != nil {
		return nil, err
	}
	return Summarize(r, ins), nil
}

// Summarize computes the summary of a run from its results.
func Summarize(r *store.Run, results []store.InstanceResult) *Summary {
	s := &Summary{
		RunID: r.ID, Task: r.Task, Agent: r.Agent, Status: r.Status, Planned: r.Total,
		TaskArgs: r.TaskArgs, DatasetRevision: r.DatasetRevision, LLM: r.LLM, Plugins: r.Plugins,
		HostVersion: r.HostVersion, IdempotencyKey: r.IdempotencyKey, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		Errors: map[string]int{}, Instances: make([]Instance, 0, len(results)),
	}
	var score float64
	durations := make([]int64, 0, len(results))
	for _, res := range results {
		s.Instances = append(s.Instances, instanceOf(res))
		s.Total++
		score += res.Score
		durations = append(durations, res.DurationMS)
		s.Tokens = s.Tokens.Add(res.Usage)
		switch {
		case res.Passed:
			s.Passed++
		case res.ErrorClass != store.ErrorNone:
			s.Errored++
			s.Errors[res.ErrorClass]++
			s.Failed++
		default:
			s.Failed++
		}
	}
	if s.Total > 0 {
		s.PassRate = float64(s.Passed) / float64(s.Total)
		s.MeanScore = score / float64(s.Total)
	}
	slices.Sort(durations)
	s.DurationP50MS = percentile(durations, 0.50)
	s.DurationP95MS = percentile(durations, 0.95)
	return s
}

// percentile is the nearest-rank percentile of sorted xs; 0 for none.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}
