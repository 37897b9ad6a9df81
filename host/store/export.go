package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// JSONLRecord is one line of ExportJSONL: an instance result with its run's
// task and agent and its steps.
type JSONLRecord struct {
	Task  string `json:"task"`
	Agent string `json:"agent"`
	InstanceResult
	Steps []Step `json:"steps"`
}

// eachInstance calls fn for every instance of a run, in instance id order,
// with its steps, from one consistent snapshot.
func (s *Store) eachInstance(ctx context.Context, op, runID string, fn func(*Run, InstanceResult, []Step) error) error {
	return s.readTx(ctx, op, func(tx *sql.Tx) error {
		r, err := getRun(ctx, tx, `WHERE id = ?`, runID)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", runID)
		}
		if err != nil {
			return err
		}
		insts, err := instances(ctx, tx, runID)
		if err != nil {
			return err
		}
		for _, in := range insts {
			st, err := steps(ctx, tx, runID, in.InstanceID)
			if err != nil {
				return err
			}
			if err := fn(r, in, st); err != nil {
				return err
			}
		}
		return nil
	})
}

// ExportJSONL writes one JSON object (a JSONLRecord) per line for every
// instance of a run, in instance id order.
func (s *Store) ExportJSONL(ctx context.Context, w io.Writer, runID string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return s.eachInstance(ctx, "export run "+runID+" as jsonl", runID, func(r *Run, in InstanceResult, st []Step) error {
		if st == nil {
			st = []Step{}
		}
		if err := enc.Encode(JSONLRecord{Task: r.Task, Agent: r.Agent, InstanceResult: in, Steps: st}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
}
