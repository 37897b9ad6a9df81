package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultPath is where the runs database lives unless --db says otherwise.
const DefaultPath = ".nexus/runs.db"

// DefaultBusyTimeout is how long a write waits for another process's lock.
const DefaultBusyTimeout = 5 * time.Second

// Sentinel errors; check with errors.Is. The errors returned wrap them with
// the database path and what to do.
var (
	// ErrNotFound: no run (or instance) with that id or key.
	ErrNotFound = errors.New("not found")
	// ErrNewerSchema: the database was written by a newer nexus-host.
	ErrNewerSchema = errors.New("schema is newer than this nexus-host supports")
	// ErrCorrupt: the file is not a SQLite database, not a runs database,
	// or its pages are damaged.
	ErrCorrupt = errors.New("not a usable runs database")
	// ErrLocked: another process held the database beyond the busy timeout.
	ErrLocked = errors.New("database is locked")
	// ErrFull: the disk (or the database's page limit) is full.
	ErrFull = errors.New("database or disk is full")
)

// applicationID marks a SQLite file as a nexus runs database ("NXRN").
const applicationID = 0x4e58524e

// Option configures Open.
type Option func(*options)

type options struct {
	busyTimeout time.Duration
}

// WithBusyTimeout sets how long an operation waits for a lock another
// process holds before failing with ErrLocked; the default is
// DefaultBusyTimeout.
func WithBusyTimeout(d time.Duration) Option {
	return func(o *options) { o.busyTimeout = d }
}

// Store is an open runs database. It is safe for concurrent use.
type Store struct {
	path string
	busy time.Duration
	w    *sql.DB // one connection: writes are serialised in-process
	r    *sql.DB // readers (WAL lets them run beside the writer)
}

// Open opens (creating it and its parent directories when missing) the
// runs database at path and migrates it to the current schema.
//
// A file that is not a SQLite database, or a SQLite database that is not
// a runs database, fails with ErrCorrupt; one written by a newer schema
// fails with ErrNewerSchema; in both cases the file is not modified. A
// database another process keeps locked beyond the busy timeout fails
// with ErrLocked.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{busyTimeout: DefaultBusyTimeout}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		path = DefaultPath
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("runs database %q: create its directory: %w", path, err)
		}
	}
	s := &Store{path: path, busy: o.busyTimeout}
	exists, err := checkHeader(path)
	if err != nil {
		return nil, err
	}
	if exists {
		// Look before touching: the write pool switches the file to WAL,
		// which a newer or foreign database must never see.
		if err := s.probe(ctx); err != nil {
			return nil, err
		}
	}
	ms := int64(o.busyTimeout / time.Millisecond)
	if s.w, err = sql.Open("sqlite", dsn(path, ms, "_txlock=immediate", "_pragma=journal_mode(WAL)", "_pragma=synchronous(FULL)")); err != nil {
		return nil, s.wrap("open", err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if s.r, err = sql.Open("sqlite", dsn(path, ms, "_pragma=query_only(1)")); err != nil {
		s.w.Close()
		return nil, s.wrap("open", err)
	}
	s.r.SetMaxOpenConns(4)
	if err := migrate(ctx, s, migrations); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// dsn returns a SQLite URI for path with the connection settings every
// connection needs (busy timeout first, foreign keys) and extra.
func dsn(path string, busyMS int64, extra ...string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	path = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(path))
	q := fmt.Sprintf("_pragma=busy_timeout(%d)&_pragma=foreign_keys(1)", busyMS)
	for _, e := range extra {
		q += "&" + e
	}
	return "file:" + path + "?" + q
}

// Path returns the database's path.
func (s *Store) Path() string { return s.path }

// Close closes the database. Results already recorded are on disk.
func (s *Store) Close() error {
	var errs []error
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}

var sqliteMagic = []byte("SQLite format 3\x00")

// checkHeader reports whether path holds data, and refuses a file whose
// header is not SQLite's. It only reads.
func checkHeader(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runs database %q: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, fmt.Errorf("runs database %q: %w", path, err)
	}
	if fi.IsDir() {
		return false, fmt.Errorf("runs database %q: %w: it is a directory; pass a file path", path, ErrCorrupt)
	}
	if fi.Size() == 0 {
		return false, nil // SQLite treats an empty file as an empty database
	}
	head := make([]byte, len(sqliteMagic))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return false, fmt.Errorf("runs database %q: %w", path, err)
	}
	if !bytes.Equal(head[:n], sqliteMagic) {
		return false, fmt.Errorf("runs database %q: %w: the file is not a SQLite database (it starts with %q); it was not modified: move it aside or pass another --db",
			path, ErrCorrupt, head[:n])
	}
	return true, nil
}

// probe reads the schema version of an existing file through a
// connection that changes nothing, and refuses newer or foreign
// databases.
func (s *Store) probe(ctx context.Context) error {
	db, err := sql.Open("sqlite", dsn(s.path, int64(s.busy/time.Millisecond), "mode=rw", "_pragma=query_only(1)"))
	if err != nil {
		return s.wrap("open", err)
	}
	defer db.Close()
	_, err = version(ctx, db, len(migrations))
	return s.wrap("open", err)
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// version returns the schema version of the database behind q, or an
// error when it is newer than latest or not a runs database.
func version(ctx context.Context, q querier, latest int) (int, error) {
	var v, appID, tables int
	if err := q.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, err
	}
	if err := q.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, err
	}
	if appID != 0 && appID != applicationID {
		return 0, fmt.Errorf("%w: it is a SQLite database of another application (application_id %#x); the file was not modified: pass another --db",
			ErrCorrupt, appID)
	}
	if v > latest {
		return 0, fmt.Errorf("%w: its schema version is %d, this nexus-host knows up to %d; the file was not modified: upgrade nexus-host or pass another --db",
			ErrNewerSchema, v, latest)
	}
	if v == 0 {
		if err := q.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&tables); err != nil {
			return 0, err
		}
		if tables > 0 {
			return 0, fmt.Errorf("%w: it is a SQLite database with tables but no nexus schema version; the file was not modified: pass another --db",
				ErrCorrupt)
		}
	}
	return v, nil
}

// sqliteCode returns the primary SQLite result code of err, or 0.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return 0
}

// wrap turns a driver error into one that names the database, says what
// happened and what to do, and wraps the matching sentinel.
func (s *Store) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	switch sqliteCode(err) {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("runs database %q: %s: %w by another process (waited %s): wait for the other nexus-host to finish or pass another --db (%w)",
			s.path, op, ErrLocked, s.busy, err)
	case sqlite3.SQLITE_FULL:
		return fmt.Errorf("runs database %q: %s: %w: free disk space, then resume the run; results already recorded are kept (%w)",
			s.path, op, ErrFull, err)
	case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
		return fmt.Errorf("runs database %q: %s: %w: the file is damaged; move it aside or pass another --db (%w)",
			s.path, op, ErrCorrupt, err)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM:
		return fmt.Errorf("runs database %q: %s: %w: check the file's and its directory's permissions", s.path, op, err)
	}
	return fmt.Errorf("runs database %q: %s: %w", s.path, op, err)
}

// writeTx runs fn in an immediate write transaction and commits. fn
// returns unwrapped errors; writeTx wraps them once.
func (s *Store) writeTx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.wrap(op, err)
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return s.wrap(op, err)
	}
	if err := tx.Commit(); err != nil {
		return s.wrap(op, err)
	}
	return nil
}

// readTx runs fn in a read transaction: one consistent snapshot.
func (s *Store) readTx(ctx context.Context, op string, fn func(*sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return s.wrap(op, err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return s.wrap(op, err)
	}
	return nil
}
