package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// RecordInstance stores the result of one instance and its steps in one
// transaction, replacing any earlier result and steps of the same instance
// (a resumed instance). When it returns nil the result is on disk.
//
// Steps with Seq 0 are numbered by their position (from 1); their RunID and
// InstanceID may be left empty.
func (s *Store) RecordInstance(ctx context.Context, res InstanceResult, steps []Step) error {
	op := fmt.Sprintf("record instance %q of run %s", res.InstanceID, res.RunID)
	if err := res.validate(); err != nil {
		return fmt.Errorf("runs database %q: %s: %w", s.path, op, err)
	}
	steps = slices.Clone(steps)
	seen := make(map[int]bool, len(steps))
	for i := range steps {
		st := &steps[i]
		if st.Seq == 0 {
			st.Seq = i + 1
		}
		if err := st.validate(&res); err != nil {
			return fmt.Errorf("runs database %q: %s: %w", s.path, op, err)
		}
		if seen[st.Seq] {
			return fmt.Errorf("runs database %q: %s: two steps have seq %d", s.path, op, st.Seq)
		}
		seen[st.Seq] = true
	}
	return s.writeTx(ctx, op, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, res.RunID).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return notFound("run", res.RunID)
		}
		// Delete explicitly rather than rely on REPLACE: REPLACE's implicit
		// delete does not fire foreign-key cascades unless recursive
		// triggers are on.
		if _, err := tx.ExecContext(ctx, `DELETE FROM steps WHERE run_id = ? AND instance_id = ?`, res.RunID, res.InstanceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM instances WHERE run_id = ? AND instance_id = ?`, res.RunID, res.InstanceID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO instances (run_id, instance_id, passed, score, output, details,
			error_class, error, duration_ms, prompt_tokens, completion_tokens, total_tokens, started_at, ended_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			res.RunID, res.InstanceID, res.Passed, res.Score, jsonValue(res.Output), jsonValue(res.Details),
			res.ErrorClass, res.Error, res.DurationMS, res.Usage.PromptTokens, res.Usage.CompletionTokens,
			res.Usage.TotalTokens, timeValue(res.StartedAt), timeValue(res.EndedAt)); err != nil {
			return err
		}
		if len(steps) == 0 {
			return nil
		}
		stmt, err := tx.PrepareContext(ctx, `INSERT INTO steps (run_id, instance_id, seq, kind, name, input, output,
			error, prompt_tokens, completion_tokens, total_tokens, started_at, duration_ms)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, st := range steps {
			if _, err := stmt.ExecContext(ctx, res.RunID, res.InstanceID, st.Seq, st.Kind, st.Name,
				jsonValue(st.Input), jsonValue(st.Output), st.Error, st.Usage.PromptTokens,
				st.Usage.CompletionTokens, st.Usage.TotalTokens, timeValue(st.StartedAt), st.DurationMS); err != nil {
				return err
			}
		}
		return nil
	})
}

const instanceColumns = `run_id, instance_id, passed, score, output, details, error_class, error,
	duration_ms, prompt_tokens, completion_tokens, total_tokens, started_at, ended_at`

func scanInstance(sc rowScanner) (InstanceResult, error) {
	var (
		r                             InstanceResult
		output, details, start, ended sql.NullString
	)
	if err := sc.Scan(&r.RunID, &r.InstanceID, &r.Passed, &r.Score, &output, &details, &r.ErrorClass, &r.Error,
		&r.DurationMS, &r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.TotalTokens, &start, &ended); err != nil {
		return r, err
	}
	r.Output, r.Details = rawJSON(output), rawJSON(details)
	var err error
	if r.StartedAt, err = parseTime(start); err != nil {
		return r, err
	}
	r.EndedAt, err = parseTime(ended)
	return r, err
}

func runExists(ctx context.Context, tx *sql.Tx, id string) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?)`, id).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return notFound("run", id)
	}
	return nil
}

func instances(ctx context.Context, tx *sql.Tx, runID string) ([]InstanceResult, error) {
	if err := runExists(ctx, tx, runID); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+instanceColumns+` FROM instances WHERE run_id = ? ORDER BY instance_id`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []InstanceResult
	for rows.Next() {
		r, err := scanInstance(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// Instances returns the recorded results of a run, ordered by instance id.
func (s *Store) Instances(ctx context.Context, runID string) ([]InstanceResult, error) {
	var out []InstanceResult
	err := s.readTx(ctx, "list instances of run "+runID, func(tx *sql.Tx) (err error) {
		out, err = instances(ctx, tx, runID)
		return err
	})
	return out, err
}

// Instance returns the recorded result of one instance, or an error
// wrapping ErrNotFound.
func (s *Store) Instance(ctx context.Context, runID, instanceID string) (InstanceResult, error) {
	var r InstanceResult
	err := s.readTx(ctx, "get instance of run "+runID, func(tx *sql.Tx) (err error) {
		r, err = scanInstance(tx.QueryRowContext(ctx, `SELECT `+instanceColumns+` FROM instances
			WHERE run_id = ? AND instance_id = ?`, runID, instanceID))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("instance %q of run %s: %w", instanceID, runID, ErrNotFound)
		}
		return err
	})
	return r, err
}

func steps(ctx context.Context, tx *sql.Tx, runID, instanceID string) ([]Step, error) {
	rows, err := tx.QueryContext(ctx, `SELECT run_id, instance_id, seq, kind, name, input, output, error,
		prompt_tokens, completion_tokens, total_tokens, started_at, duration_ms
		FROM steps WHERE run_id = ? AND instance_id = ? ORDER BY seq`, runID, instanceID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Step
	for rows.Next() {
		var (
			st                   Step
			input, output, start sql.NullString
		)
		if err := rows.Scan(&st.RunID, &st.InstanceID, &st.Seq, &st.Kind, &st.Name, &input, &output, &st.Error,
			&st.Usage.PromptTokens, &st.Usage.CompletionTokens, &st.Usage.TotalTokens, &start, &st.DurationMS); err != nil {
			return nil, err
		}
		st.Input, st.Output = rawJSON(input), rawJSON(output)
		if st.StartedAt, err = parseTime(start); err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, rows.Err()
}

// Steps returns the trajectory of one instance, ordered by Seq.
func (s *Store) Steps(ctx context.Context, runID, instanceID string) ([]Step, error) {
	var out []Step
	err := s.readTx(ctx, "list steps of run "+runID, func(tx *sql.Tx) (err error) {
		out, err = steps(ctx, tx, runID, instanceID)
		return err
	})
	return out, err
}

// Done returns the ids of the instances of a run whose results stand:
// resuming the run skips them. An instance with no result, or whose result
// is Retryable (infra_error, timeout, cancelled), is not in the map and
// runs again.
func (s *Store) Done(ctx context.Context, runID string) (map[string]bool, error) {
	done := map[string]bool{}
	err := s.readTx(ctx, "list finished instances of run "+runID, func(tx *sql.Tx) error {
		if err := runExists(ctx, tx, runID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT instance_id FROM instances
			WHERE run_id = ? AND error_class NOT IN ('infra_error', 'timeout', 'cancelled')`, runID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				return err
			}
			done[id] = true
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return done, nil
}
