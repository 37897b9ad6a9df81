package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// timeLayout stores times in UTC with a fixed width, so they sort as text.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(timeLayout)
}

func parseTime(ns sql.NullString) (time.Time, error) {
	if !ns.Valid || ns.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, ns.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad time %q in database: %w", ns.String, err)
	}
	return t, nil
}

func jsonValue(raw json.RawMessage) any {
	if raw == nil {
		return nil
	}
	return string(raw)
}

func rawJSON(ns sql.NullString) json.RawMessage {
	if !ns.Valid {
		return nil
	}
	return json.RawMessage(ns.String)
}

func notFound(what, id string) error {
	return fmt.Errorf("%s %q: %w: list runs with `nexus-host runs list`", what, id, ErrNotFound)
}

// CreateRun records a new run. It fills r.ID (NewRunID), r.Status
// (StatusRunning) and r.StartedAt (now) when they are empty.
func (s *Store) CreateRun(ctx context.Context, r *Run) error {
	if r.StartedAt.IsZero() {
		r.StartedAt = time.Now()
	}
	if r.ID == "" {
		r.ID = NewRunID(r.StartedAt)
	}
	if r.Status == "" {
		r.Status = StatusRunning
	}
	if err := r.validate(); err != nil {
		return fmt.Errorf("runs database %q: create run: %w", s.path, err)
	}
	return s.writeTx(ctx, "create run "+r.ID, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs (id, task, agent, task_args, dataset_revision, llm,
			host_version, idempotency_key, status, started_at, ended_at, total)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.Task, r.Agent, jsonValue(r.TaskArgs), r.DatasetRevision, jsonValue(r.LLM),
			r.HostVersion, r.IdempotencyKey, r.Status, timeValue(r.StartedAt), timeValue(r.EndedAt), r.Total)
		if err != nil {
			if sqliteCode(err) == sqlite3.SQLITE_CONSTRAINT {
				return fmt.Errorf("run %q already exists: %w", r.ID, err)
			}
			return err
		}
		for i, p := range r.Plugins {
			if _, err := tx.ExecContext(ctx, `INSERT INTO run_plugins (run_id, pos, name, version, sha256, protocol)
				VALUES (?, ?, ?, ?, ?, ?)`, r.ID, i, p.Name, p.Version, p.SHA256, p.Protocol); err != nil {
				return err
			}
		}
		return nil
	})
}

// updateRun runs an UPDATE on one run and fails with ErrNotFound when the
// run does not exist.
func (s *Store) updateRun(ctx context.Context, op, id, query string, args ...any) error {
	return s.writeTx(ctx, op+" "+id, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return notFound("run", id)
		}
		return nil
	})
}

// FinishRun sets a run's final status and end time.
func (s *Store) FinishRun(ctx context.Context, id, status string, endedAt time.Time) error {
	if err := oneOf("run status", status, statuses); err != nil {
		return fmt.Errorf("runs database %q: finish run %s: %w", s.path, id, err)
	}
	if status == StatusRunning {
		return fmt.Errorf("runs database %q: finish run %s: status %q is not final: use ReopenRun", s.path, id, status)
	}
	if endedAt.IsZero() {
		endedAt = time.Now()
	}
	return s.updateRun(ctx, "finish run", id, `UPDATE runs SET status = ?, ended_at = ? WHERE id = ?`,
		status, timeValue(endedAt), id)
}

// ReopenRun marks a run running again (no end time), for a resume.
func (s *Store) ReopenRun(ctx context.Context, id string) error {
	return s.updateRun(ctx, "reopen run", id, `UPDATE runs SET status = 'running', ended_at = NULL WHERE id = ?`, id)
}

// SetTotal records how many instances a run has, once the task has said.
func (s *Store) SetTotal(ctx context.Context, id string, total int) error {
	return s.updateRun(ctx, "set total of run", id, `UPDATE runs SET total = ? WHERE id = ?`, total, id)
}

const runColumns = `id, task, agent, task_args, dataset_revision, llm, host_version,
	idempotency_key, status, started_at, ended_at, total`

type rowScanner interface{ Scan(dest ...any) error }

func scanRun(sc rowScanner) (*Run, error) {
	var (
		r                      Run
		args, llm, start, ends sql.NullString
	)
	if err := sc.Scan(&r.ID, &r.Task, &r.Agent, &args, &r.DatasetRevision, &llm, &r.HostVersion,
		&r.IdempotencyKey, &r.Status, &start, &ends, &r.Total); err != nil {
		return nil, err
	}
	r.TaskArgs, r.LLM = rawJSON(args), rawJSON(llm)
	var err error
	if r.StartedAt, err = parseTime(start); err != nil {
		return nil, err
	}
	if r.EndedAt, err = parseTime(ends); err != nil {
		return nil, err
	}
	return &r, nil
}

func plugins(ctx context.Context, tx *sql.Tx, id string) ([]PluginRef, error) {
	rows, err := tx.QueryContext(ctx, `SELECT name, version, sha256, protocol FROM run_plugins WHERE run_id = ? ORDER BY pos`, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ps []PluginRef
	for rows.Next() {
		var p PluginRef
		if err := rows.Scan(&p.Name, &p.Version, &p.SHA256, &p.Protocol); err != nil {
			return nil, err
		}
		ps = append(ps, p)
	}
	return ps, rows.Err()
}

func getRun(ctx context.Context, tx *sql.Tx, where string, args ...any) (*Run, error) {
	r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs `+where, args...))
	if err != nil {
		return nil, err
	}
	if r.Plugins, err = plugins(ctx, tx, r.ID); err != nil {
		return nil, err
	}
	return r, nil
}

// GetRun returns the run with that id, or an error wrapping ErrNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (*Run, error) {
	var r *Run
	err := s.readTx(ctx, "get run", func(tx *sql.Tx) (err error) {
		r, err = getRun(ctx, tx, `WHERE id = ?`, id)
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		return err
	})
	return r, err
}

// FindRunByKey returns the latest run with that idempotency key, or an
// error wrapping ErrNotFound.
func (s *Store) FindRunByKey(ctx context.Context, key string) (*Run, error) {
	var r *Run
	err := s.readTx(ctx, "find run by key", func(tx *sql.Tx) (err error) {
		if key == "" {
			return fmt.Errorf("empty idempotency key: %w", ErrNotFound)
		}
		r, err = getRun(ctx, tx, `WHERE idempotency_key = ? ORDER BY started_at DESC, id DESC LIMIT 1`, key)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no run with idempotency key %s: %w", key, ErrNotFound)
		}
		return err
	})
	return r, err
}

// ListRuns returns the newest runs first (all of them when limit <= 0)
// with the counts of their results.
func (s *Store) ListRuns(ctx context.Context, limit int) ([]RunSummary, error) {
	if limit <= 0 {
		limit = -1
	}
	var out []RunSummary
	err := s.readTx(ctx, "list runs", func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+runColumns+` FROM runs ORDER BY started_at DESC, id DESC LIMIT ?`, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			out = append(out, RunSummary{Run: *r})
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		for i := range out {
			if err := summarize(ctx, tx, &out[i]); err != nil {
				return err
			}
		}
		return nil
	})
	return out, err
}

// Summary returns one run with the counts of its results.
func (s *Store) Summary(ctx context.Context, id string) (*RunSummary, error) {
	var sum *RunSummary
	err := s.readTx(ctx, "summarize run", func(tx *sql.Tx) error {
		r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id))
		if errors.Is(err, sql.ErrNoRows) {
			return notFound("run", id)
		}
		if err != nil {
			return err
		}
		sum = &RunSummary{Run: *r}
		return summarize(ctx, tx, sum)
	})
	return sum, err
}

func summarize(ctx context.Context, tx *sql.Tx, sum *RunSummary) error {
	var err error
	if sum.Plugins, err = plugins(ctx, tx, sum.ID); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, `SELECT passed, error_class, count(*) FROM instances
		WHERE run_id = ? GROUP BY passed, error_class`, sum.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			passed bool
			class  string
			n      int
		)
		if err := rows.Scan(&passed, &class, &n); err != nil {
			return err
		}
		sum.Recorded += n
		switch {
		case class != ErrorNone:
			sum.Errored += n
			if sum.Errors == nil {
				sum.Errors = map[string]int{}
			}
			sum.Errors[class] += n
		case passed:
			sum.Passed += n
		default:
			sum.Failed += n
		}
	}
	return rows.Err()
}
