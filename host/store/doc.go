// Package store owns the durable record of evaluation runs: a SQLite
// database (modernc.org/sqlite, pure Go) holding one row per run, one per
// instance result and one per step of an instance's trajectory (every LLM
// and tool call made through host services).
//
// It owns the schema and its migrations, the idempotency key that says
// which runs would produce the same results, the resume query (which
// instances still need to run), and the export formats of a run (JSONL and
// Harbor's ATIF). It does not run anything: the runner writes here as each
// instance finishes, and the CLI reads.
//
// The database is opened in WAL mode with foreign keys on and
// synchronous=FULL, so a result is on disk when RecordInstance returns and
// a crash loses at most the instances in flight. Writers in one process are
// serialised on one connection; several processes (or Stores) on the same
// file wait for each other up to the busy timeout. A file that is not a
// SQLite database, or that was written by a newer schema, is refused and
// left untouched.
package store
