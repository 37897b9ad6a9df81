package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations[i] takes the schema from version i to version i+1; the
// database's PRAGMA user_version is the number applied. Append only: never
// edit a migration that has shipped.
//
// Times are TEXT in UTC, fixed width (timeLayout) so they sort; JSON
// values are TEXT; NULL means "not set".
var migrations = []string{
	// 1: runs, their plugins, instance results, steps.
	`
PRAGMA application_id = 1314411086; -- applicationID, "NXRN"

CREATE TABLE runs (
	id               TEXT PRIMARY KEY,
	task             TEXT NOT NULL,
	agent            TEXT NOT NULL,
	task_args        TEXT,
	dataset_revision TEXT NOT NULL DEFAULT '',
	llm              TEXT,
	host_version     TEXT NOT NULL DEFAULT '',
	idempotency_key  TEXT NOT NULL DEFAULT '',
	status           TEXT NOT NULL CHECK (status IN ('running', 'completed', 'interrupted', 'failed')),
	started_at       TEXT NOT NULL,
	ended_at         TEXT,
	total            INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_key ON runs (idempotency_key, started_at);

CREATE TABLE run_plugins (
	run_id   TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	pos      INTEGER NOT NULL,
	name     TEXT NOT NULL,
	version  TEXT NOT NULL DEFAULT '',
	sha256   TEXT NOT NULL,
	protocol INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, pos)
) WITHOUT ROWID;

CREATE TABLE instances (
	run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	instance_id       TEXT NOT NULL,
	passed            INTEGER NOT NULL CHECK (passed IN (0, 1)),
	score             REAL NOT NULL,
	output            TEXT,
	details           TEXT,
	error_class       TEXT NOT NULL DEFAULT '' CHECK (error_class IN ('', 'agent_error', 'task_error', 'infra_error', 'timeout', 'cancelled')),
	error             TEXT NOT NULL DEFAULT '',
	duration_ms       INTEGER NOT NULL DEFAULT 0,
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	total_tokens      INTEGER NOT NULL DEFAULT 0,
	started_at        TEXT,
	ended_at          TEXT,
	PRIMARY KEY (run_id, instance_id)
) WITHOUT ROWID;

CREATE TABLE steps (
	run_id            TEXT NOT NULL,
	instance_id       TEXT NOT NULL,
	seq               INTEGER NOT NULL,
	kind              TEXT NOT NULL CHECK (kind IN ('llm', 'tool')),
	name              TEXT NOT NULL DEFAULT '',
	input             TEXT,
	output            TEXT,
	error             TEXT NOT NULL DEFAULT '',
	prompt_tokens     INTEGER NOT NULL DEFAULT 0,
	completion_tokens INTEGER NOT NULL DEFAULT 0,
	total_tokens      INTEGER NOT NULL DEFAULT 0,
	started_at        TEXT,
	duration_ms       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (run_id, instance_id, seq),
	FOREIGN KEY (run_id, instance_id) REFERENCES instances (run_id, instance_id) ON DELETE CASCADE
) WITHOUT ROWID;
`,
}

// SchemaVersion is the schema version this package writes: the number of
// migrations.
const SchemaVersion = 1

// migrate applies the migrations the database lacks, each in its own
// write transaction (which also guards against another process migrating
// at the same time), refusing a database newer than ms.
func migrate(ctx context.Context, s *Store, ms []string) error {
	for {
		done := false
		err := s.writeTx(ctx, "migrate", func(tx *sql.Tx) error {
			v, err := version(ctx, tx, len(ms))
			if err != nil {
				return err
			}
			if v == len(ms) {
				done = true
				return nil
			}
			if _, err := tx.ExecContext(ctx, ms[v]); err != nil {
				return fmt.Errorf("schema version %d: %w", v+1, err)
			}
			_, err = tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1))
			return err
		})
		if err != nil || done {
			return err
		}
	}
}
