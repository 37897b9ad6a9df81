package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// open opens a store at a fresh path (or path, when given) and closes it
// at the end of the test.
func open(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "runs.db")
	}
	s, err := Open(t.Context(), path, opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// rawDB opens path with plain database/sql, bypassing the store.
func rawDB(t *testing.T, path string, params ...string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn(path, 100, params...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 7, 1, 12, 0, 0, 123456789, time.UTC)

func newRun(t *testing.T, s *Store, mod func(*Run)) *Run {
	t.Helper()
	r := &Run{
		Task:            "exercises",
		Agent:           "oracle",
		TaskArgs:        json.RawMessage(`{"dir":"x"}`),
		DatasetRevision: "rev1",
		LLM:             json.RawMessage(`{"model":"m1","temperature":0}`),
		Plugins: []PluginRef{
			{Name: "oracle", Version: "1.2.3", SHA256: "aa", Protocol: 1},
			{Name: "exercises", Version: "0.1.0", SHA256: "bb", Protocol: 1},
		},
		HostVersion: "0.9.0",
		StartedAt:   t0,
		Total:       3,
	}
	if mod != nil {
		mod(r)
	}
	if err := s.CreateRun(t.Context(), r); err != nil {
		t.Fatalf("CreateRun: %v", err)
	}
	return r
}

func result(runID, id, class string, passed bool) InstanceResult {
	return InstanceResult{
		RunID: runID, InstanceID: id, Passed: passed, Score: map[bool]float64{true: 1}[passed],
		Output: json.RawMessage(`{"answer":42}`), Details: json.RawMessage(`{"tests":"ok"}`),
		ErrorClass: class, DurationMS: 1500,
		Usage:     Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
		StartedAt: t0.Add(time.Second), EndedAt: t0.Add(2500 * time.Millisecond),
	}
}

func trajectory() []Step {
	return []Step{
		{Kind: KindLLM, Name: "default", Input: json.RawMessage(`{"model":"m1","messages":[{"role":"user","content":"hi"}]}`),
			Output: json.RawMessage(`{"content":"call the tool"}`), Usage: Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15},
			StartedAt: t0.Add(time.Second), DurationMS: 300},
		{Kind: KindTool, Name: "write_file", Input: json.RawMessage(`{"path":"a.go"}`), Output: json.RawMessage(`"ok"`),
			StartedAt: t0.Add(1300 * time.Millisecond), DurationMS: 20},
		{Kind: KindTool, Name: "run", Input: json.RawMessage(`"go test"`), Error: "exit status 1",
			StartedAt: t0.Add(1400 * time.Millisecond), DurationMS: 900},
	}
}

func pragmaInt(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, name string) int {
	t.Helper()
	var n int
	if err := q.QueryRowContext(t.Context(), "PRAGMA "+name).Scan(&n); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return n
}

func TestOpenMigrates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(t *testing.T, path string)
	}{
		{"missing file and directories", func(*testing.T, string) {}},
		{"empty file", func(t *testing.T, path string) {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "a", "b", "runs.db")
			tc.setup(t, path)
			s := open(t, path)
			if got := pragmaInt(t, s.r, "user_version"); got != SchemaVersion {
				t.Errorf("user_version = %d, want %d", got, SchemaVersion)
			}
			if got := pragmaInt(t, s.r, "application_id"); got != applicationID {
				t.Errorf("application_id = %#x, want %#x", got, applicationID)
			}
			if got := pragmaInt(t, s.w, "foreign_keys"); got != 1 {
				t.Errorf("foreign_keys = %d, want 1", got)
			}
			if got := pragmaInt(t, s.w, "synchronous"); got != 2 {
				t.Errorf("synchronous = %d, want 2 (FULL)", got)
			}
			var mode string
			if err := s.r.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
				t.Errorf("journal_mode = %q, %v; want wal", mode, err)
			}
			var tables []string
			rows, err := s.r.QueryContext(t.Context(), "SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var n string
				if err := rows.Scan(&n); err != nil {
					t.Fatal(err)
				}
				tables = append(tables, n)
			}
			rows.Close()
			if diff := cmp.Diff([]string{"instances", "run_plugins", "runs", "steps"}, tables); diff != "" {
				t.Errorf("tables (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMigrateAppliesInOrder(t *testing.T) {
	t.Parallel()
	if SchemaVersion != len(migrations) {
		t.Fatalf("SchemaVersion = %d, but there are %d migrations", SchemaVersion, len(migrations))
	}
	path := filepath.Join(t.TempDir(), "runs.db")
	s := open(t, path)
	ms := append(append([]string(nil), migrations...),
		`CREATE TABLE extra (a INTEGER);`,
		`ALTER TABLE extra ADD COLUMN b INTEGER; INSERT INTO extra (a, b) VALUES (1, 2);`)
	if err := migrate(t.Context(), s, ms); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	if got := pragmaInt(t, s.r, "user_version"); got != len(ms) {
		t.Errorf("user_version = %d, want %d", got, len(ms))
	}
	var a, b int
	if err := s.r.QueryRowContext(t.Context(), "SELECT a, b FROM extra").Scan(&a, &b); err != nil || a != 1 || b != 2 {
		t.Errorf("extra = %d, %d, %v; want 1, 2", a, b, err)
	}
	// Running again is a no-op; the store's own (older) list now refuses.
	if err := migrate(t.Context(), s, ms); err != nil {
		t.Errorf("second migrate: %v", err)
	}
	if err := migrate(t.Context(), s, migrations); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("migrate with fewer migrations = %v, want ErrNewerSchema", err)
	}
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	r := newRun(t, s, nil)
	if err := s.RecordInstance(t.Context(), result(r.ID, "i1", "", true), trajectory()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := open(t, path)
	got, err := s2.GetRun(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(r, got); diff != "" {
		t.Errorf("run after reopen (-want +got):\n%s", diff)
	}
	insts, err := s2.Instances(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]InstanceResult{result(r.ID, "i1", "", true)}, insts); diff != "" {
		t.Errorf("instances after reopen (-want +got):\n%s", diff)
	}
}

func TestOpenRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(t *testing.T, path string)
		want    error
		wantMsg string
	}{
		{
			name: "newer schema",
			setup: func(t *testing.T, path string) {
				s, err := Open(t.Context(), path)
				if err != nil {
					t.Fatal(err)
				}
				newRun(t, s, nil)
				if _, err := s.w.ExecContext(t.Context(), "PRAGMA user_version = 99"); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			},
			want:    ErrNewerSchema,
			wantMsg: "schema version is 99",
		},
		{
			name: "text file",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, []byte("these are my notes, not a database\n"+strings.Repeat("x", 5000)))
			},
			want:    ErrCorrupt,
			wantMsg: "not a SQLite database",
		},
		{
			name:    "short garbage",
			setup:   func(t *testing.T, path string) { writeFile(t, path, []byte("SQLite")) },
			want:    ErrCorrupt,
			wantMsg: "not a SQLite database",
		},
		{
			name: "sqlite header, damaged body",
			setup: func(t *testing.T, path string) {
				writeFile(t, path, append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xff}, 4096)...))
			},
			want: ErrCorrupt,
		},
		{
			name: "another application's database",
			setup: func(t *testing.T, path string) {
				db := rawDB(t, path)
				if _, err := db.ExecContext(t.Context(), "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"); err != nil {
					t.Fatal(err)
				}
				db.Close()
			},
			want:    ErrCorrupt,
			wantMsg: "no nexus schema version",
		},
		{
			name: "another application id",
			setup: func(t *testing.T, path string) {
				db := rawDB(t, path)
				if _, err := db.ExecContext(t.Context(), "PRAGMA application_id = 7; PRAGMA user_version = 1"); err != nil {
					t.Fatal(err)
				}
				db.Close()
			},
			want:    ErrCorrupt,
			wantMsg: "another application",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "runs.db")
			tc.setup(t, path)
			before := readFile(t, path)
			s, err := Open(t.Context(), path)
			if err == nil {
				s.Close()
				t.Fatal("Open succeeded, want an error")
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("Open error = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) || !strings.Contains(err.Error(), path) {
				t.Errorf("Open error = %q, want it to name %q and say %q", err, path, tc.wantMsg)
			}
			if after := readFile(t, path); !bytes.Equal(before, after) {
				t.Errorf("Open modified the file (%d bytes before, %d after)", len(before), len(after))
			}
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// holdWriteLock takes the database's write lock from another connection
// and keeps it until the test ends.
func holdWriteLock(t *testing.T, path string) {
	t.Helper()
	db := rawDB(t, path, "_txlock=immediate")
	tx, err := db.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatalf("take the write lock: %v", err)
	}
	t.Cleanup(func() { tx.Rollback() })
}

func TestLockedDatabase(t *testing.T) {
	t.Parallel()
	const busy = 50 * time.Millisecond
	tests := []struct {
		name string
		run  func(t *testing.T, path string) error
	}{
		{
			name: "open needs to migrate",
			run: func(t *testing.T, path string) error {
				db := rawDB(t, path) // an empty database: Open must migrate it
				if _, err := db.ExecContext(t.Context(), "PRAGMA journal_mode = WAL"); err != nil {
					t.Fatal(err)
				}
				holdWriteLock(t, path)
				s, err := Open(t.Context(), path, WithBusyTimeout(busy))
				if err == nil {
					s.Close()
				}
				return err
			},
		},
		{
			name: "record instance",
			run: func(t *testing.T, path string) error {
				s := open(t, path, WithBusyTimeout(busy))
				r := newRun(t, s, nil)
				holdWriteLock(t, path)
				return s.RecordInstance(t.Context(), result(r.ID, "i1", "", true), nil)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "runs.db")
			err := tc.run(t, path)
			if !errors.Is(err, ErrLocked) {
				t.Fatalf("error = %v, want ErrLocked", err)
			}
			for _, want := range []string{path, "locked by another process", "waited 50ms"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

func TestRecordInstanceReplaces(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	r := newRun(t, s, nil)
	ctx := t.Context()
	first := result(r.ID, "i1", ErrorTimeout, false)
	if err := s.RecordInstance(ctx, first, trajectory()); err != nil {
		t.Fatal(err)
	}
	st, err := s.Steps(ctx, r.ID, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if len(st) != 3 || st[0].Seq != 1 || st[2].Seq != 3 || st[1].RunID != r.ID || st[1].InstanceID != "i1" {
		t.Errorf("steps = %+v, want 3 numbered 1..3 of run %s instance i1", st, r.ID)
	}

	second := result(r.ID, "i1", "", true)
	second.Output = json.RawMessage(`"resumed"`)
	want := []Step{{RunID: r.ID, InstanceID: "i1", Seq: 7, Kind: KindLLM, Name: "x", StartedAt: t0}}
	if err := s.RecordInstance(ctx, second, want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Instance(ctx, r.ID, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(second, got); diff != "" {
		t.Errorf("instance after resume (-want +got):\n%s", diff)
	}
	st, err = s.Steps(ctx, r.ID, "i1")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("steps after resume (-want +got):\n%s", diff)
	}
}

func TestRecordInstanceRejects(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	r := newRun(t, s, nil)
	tests := []struct {
		name  string
		res   InstanceResult
		steps []Step
		want  string
		is    error
	}{
		{"unknown run", result("nope", "i1", "", true), nil, `run "nope"`, ErrNotFound},
		{"no instance id", result(r.ID, "", "", true), nil, "no instance id", nil},
		{"bad error class", result(r.ID, "i1", "oops", false), nil, `error class "oops" is not one of`, nil},
		{"passed with error", result(r.ID, "i1", ErrorAgent, true), nil, "cannot pass", nil},
		{"bad output", func() InstanceResult {
			res := result(r.ID, "i1", "", true)
			res.Output = json.RawMessage(`{`)
			return res
		}(), nil, "output is not valid JSON", nil},
		{"bad step kind", result(r.ID, "i1", "", true), []Step{{Kind: "shell"}}, `step kind "shell"`, nil},
		{"duplicate seq", result(r.ID, "i1", "", true), []Step{{Seq: 2, Kind: KindLLM}, {Kind: KindLLM}}, "two steps have seq 2", nil},
		{"step of another instance", result(r.ID, "i1", "", true), []Step{{InstanceID: "i2", Kind: KindLLM}}, "not to this instance", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := s.RecordInstance(t.Context(), tc.res, tc.steps)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one saying %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error = %v, want it to wrap %v", err, tc.is)
			}
		})
	}
	if insts, err := s.Instances(t.Context(), r.ID); err != nil || len(insts) != 0 {
		t.Errorf("Instances = %v, %v; want none recorded", insts, err)
	}
}

func TestCreateRunRejects(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	tests := []struct {
		name string
		mod  func(*Run)
		want string
	}{
		{"no task", func(r *Run) { r.Task = "" }, "no task"},
		{"no agent", func(r *Run) { r.Agent = "" }, "no agent"},
		{"bad status", func(r *Run) { r.Status = "done" }, `run status "done"`},
		{"bad args", func(r *Run) { r.TaskArgs = json.RawMessage("{") }, "task args is not valid JSON"},
		{"api key", func(r *Run) { r.LLM = json.RawMessage(`{"model":"m","api_key":"sk-1"}`) }, "secret at /api_key"},
		{"nested secret", func(r *Run) { r.LLM = json.RawMessage(`{"providers":[{"OpenAI-Api-Key":"x"}]}`) }, "secret at /providers/0/OpenAI-Api-Key"},
		{"duplicate id", func(r *Run) { r.ID = "fixed" }, `run "fixed" already exists`},
	}
	if err := s.CreateRun(t.Context(), &Run{ID: "fixed", Task: "t", Agent: "a"}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &Run{Task: "t", Agent: "a"}
			tc.mod(r)
			err := s.CreateRun(t.Context(), r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want one saying %q", err, tc.want)
			}
		})
	}
	// Public parameters that merely mention tokens are fine.
	ok := &Run{Task: "t", Agent: "a", LLM: json.RawMessage(`{"model":"m","max_tokens":100,"api_key":""}`)}
	if err := s.CreateRun(t.Context(), ok); err != nil {
		t.Errorf("CreateRun with public config: %v", err)
	}
}

func TestRunLifecycle(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	ctx := t.Context()
	r := newRun(t, s, func(r *Run) { r.ID = ""; r.Status = "" })
	if r.ID == "" || r.Status != StatusRunning {
		t.Fatalf("CreateRun left ID %q, Status %q", r.ID, r.Status)
	}
	if err := s.SetTotal(ctx, r.ID, 8); err != nil {
		t.Fatal(err)
	}
	end := t0.Add(time.Minute)
	if err := s.FinishRun(ctx, r.ID, StatusInterrupted, end); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRun(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != StatusInterrupted || !got.EndedAt.Equal(end) || got.Total != 8 {
		t.Errorf("after finish: status %q, ended %v, total %d", got.Status, got.EndedAt, got.Total)
	}
	if err := s.ReopenRun(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.GetRun(ctx, r.ID); got.Status != StatusRunning || !got.EndedAt.IsZero() {
		t.Errorf("after reopen: status %q, ended %v", got.Status, got.EndedAt)
	}
	for name, err := range map[string]error{
		"finish unknown": s.FinishRun(ctx, "nope", StatusCompleted, end),
		"reopen unknown": s.ReopenRun(ctx, "nope"),
		"total unknown":  s.SetTotal(ctx, "nope", 1),
		"get unknown": func() error {
			_, err := s.GetRun(ctx, "nope")
			return err
		}(),
		"instances unknown": func() error {
			_, err := s.Instances(ctx, "nope")
			return err
		}(),
	} {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: error = %v, want ErrNotFound", name, err)
		}
	}
	if err := s.FinishRun(ctx, r.ID, StatusRunning, end); err == nil {
		t.Error("FinishRun with status running succeeded")
	}
}

func TestNewRunIDSorts(t *testing.T) {
	t.Parallel()
	a, b := NewRunID(t0), NewRunID(t0.Add(time.Millisecond))
	if !(a < b) || a == NewRunID(t0) {
		t.Errorf("NewRunID: %q, %q not sorted or not unique", a, b)
	}
	if !strings.HasPrefix(a, "20260701T120000.123Z-") {
		t.Errorf("NewRunID = %q", a)
	}
}

func TestDone(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	r := newRun(t, s, nil)
	tests := []struct {
		class  string
		passed bool
		done   bool
	}{
		{"", true, true},
		{"", false, true},
		{ErrorAgent, false, true},
		{ErrorTask, false, true},
		{ErrorInfra, false, false},
		{ErrorTimeout, false, false},
		{ErrorCancelled, false, false},
	}
	want := map[string]bool{}
	for i, tc := range tests {
		id := fmt.Sprintf("i%d-%s", i, tc.class)
		if err := s.RecordInstance(t.Context(), result(r.ID, id, tc.class, tc.passed), nil); err != nil {
			t.Fatal(err)
		}
		if tc.done {
			want[id] = true
		}
		if Retryable(tc.class) == tc.done {
			t.Errorf("Retryable(%q) = %v, want %v", tc.class, Retryable(tc.class), !tc.done)
		}
	}
	got, err := s.Done(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Done (-want +got):\n%s", diff)
	}
	// A retried instance that now passes is done.
	if err := s.RecordInstance(t.Context(), result(r.ID, "i5-timeout", "", true), nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Done(t.Context(), r.ID); !got["i5-timeout"] {
		t.Error("an instance re-run to a pass is not done")
	}
	other := newRun(t, s, nil)
	if got, err := s.Done(t.Context(), other.ID); err != nil || len(got) != 0 {
		t.Errorf("Done of a run without results = %v, %v; want empty", got, err)
	}
	if _, err := s.Done(t.Context(), "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Done of an unknown run = %v, want ErrNotFound", err)
	}
}

func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	base := KeyParts{
		Task: "exercises", Agent: "oracle",
		TaskArgs:        json.RawMessage(`{"dir":"x","limit":{"n":1,"m":[1,2]}}`),
		DatasetRevision: "rev1",
		PluginDigests:   []string{"bb", "aa"},
		LLM:             json.RawMessage(`{"model":"m","temperature":0.5}`),
	}
	baseKey, err := IdempotencyKey(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(baseKey) != 64 {
		t.Errorf("key %q is not a hex sha256", baseKey)
	}
	tests := []struct {
		name string
		mod  func(*KeyParts)
		same bool
	}{
		{"args key order and spacing", func(p *KeyParts) {
			p.TaskArgs = json.RawMessage(" {\"limit\": {\"m\": [1, 2], \"n\": 1},\n \"dir\": \"x\"} ")
		}, true},
		{"llm key order", func(p *KeyParts) { p.LLM = json.RawMessage(`{"temperature":0.5, "model":"m"}`) }, true},
		{"plugin order and duplicates", func(p *KeyParts) { p.PluginDigests = []string{"aa", "bb", "aa"} }, true},
		{"task", func(p *KeyParts) { p.Task = "other" }, false},
		{"agent", func(p *KeyParts) { p.Agent = "nop" }, false},
		{"arg value", func(p *KeyParts) { p.TaskArgs = json.RawMessage(`{"dir":"y","limit":{"n":1,"m":[1,2]}}`) }, false},
		{"arg array order", func(p *KeyParts) { p.TaskArgs = json.RawMessage(`{"dir":"x","limit":{"n":1,"m":[2,1]}}`) }, false},
		{"dataset revision", func(p *KeyParts) { p.DatasetRevision = "rev2" }, false},
		{"plugin digest", func(p *KeyParts) { p.PluginDigests = []string{"aa", "cc"} }, false},
		{"llm config", func(p *KeyParts) { p.LLM = json.RawMessage(`{"model":"m2","temperature":0.5}`) }, false},
		{"task and agent boundary", func(p *KeyParts) { p.Task, p.Agent = "exercisesor", "acle" }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := base
			tc.mod(&p)
			k, err := IdempotencyKey(p)
			if err != nil {
				t.Fatal(err)
			}
			if (k == baseKey) != tc.same {
				t.Errorf("key equal to base = %v, want %v", k == baseKey, tc.same)
			}
		})
	}
	t.Run("no args", func(t *testing.T) {
		t.Parallel()
		var keys []string
		for _, args := range []string{"", "null", "{}", " { } "} {
			k, err := IdempotencyKey(KeyParts{Task: "t", Agent: "a", TaskArgs: json.RawMessage(args)})
			if err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		for _, k := range keys[1:] {
			if k != keys[0] {
				t.Errorf("keys for empty args differ: %v", keys)
			}
		}
	})
	t.Run("invalid json", func(t *testing.T) {
		t.Parallel()
		for _, p := range []KeyParts{{TaskArgs: json.RawMessage("{")}, {LLM: json.RawMessage("{} {}")}} {
			if _, err := IdempotencyKey(p); err == nil {
				t.Errorf("IdempotencyKey(%+v) succeeded", p)
			}
		}
	})
	t.Run("from run", func(t *testing.T) {
		t.Parallel()
		r := Run{Task: base.Task, Agent: base.Agent, TaskArgs: base.TaskArgs, DatasetRevision: base.DatasetRevision, LLM: base.LLM,
			Plugins: []PluginRef{{Name: "a", SHA256: "aa"}, {Name: "b", SHA256: "bb"}}}
		if k, err := IdempotencyKey(r.KeyParts()); err != nil || k != baseKey {
			t.Errorf("key from run = %q, %v; want %q", k, err, baseKey)
		}
	})
}

func TestFindRunByKey(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	older := newRun(t, s, func(r *Run) { r.IdempotencyKey = "k1" })
	newer := newRun(t, s, func(r *Run) { r.IdempotencyKey = "k1"; r.StartedAt = t0.Add(time.Hour) })
	newRun(t, s, func(r *Run) { r.IdempotencyKey = "k2"; r.StartedAt = t0.Add(2 * time.Hour) })
	got, err := s.FindRunByKey(t.Context(), "k1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != newer.ID || got.ID == older.ID {
		t.Errorf("FindRunByKey = %s, want the newer run %s", got.ID, newer.ID)
	}
	if diff := cmp.Diff(newer, got); diff != "" {
		t.Errorf("run (-want +got):\n%s", diff)
	}
	for _, key := range []string{"k3", ""} {
		if _, err := s.FindRunByKey(t.Context(), key); !errors.Is(err, ErrNotFound) {
			t.Errorf("FindRunByKey(%q) = %v, want ErrNotFound", key, err)
		}
	}
}

func TestListRuns(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	ctx := t.Context()
	var runs []*Run
	for i := range 3 {
		runs = append(runs, newRun(t, s, func(r *Run) { r.StartedAt = t0.Add(time.Duration(i) * time.Hour) }))
	}
	a := runs[1]
	for i, c := range []struct {
		class  string
		passed bool
	}{{"", true}, {"", true}, {"", false}, {ErrorTimeout, false}, {ErrorAgent, false}, {ErrorAgent, false}} {
		if err := s.RecordInstance(ctx, result(a.ID, fmt.Sprint("i", i), c.class, c.passed), nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ListRuns(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []RunSummary{
		{Run: *runs[2]},
		{Run: *runs[1], Recorded: 6, Passed: 2, Failed: 1, Errored: 3, Errors: map[string]int{ErrorTimeout: 1, ErrorAgent: 2}},
		{Run: *runs[0]},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ListRuns (-want +got):\n%s", diff)
	}
	if got, err := s.ListRuns(ctx, 2); err != nil || len(got) != 2 || got[0].ID != runs[2].ID {
		t.Errorf("ListRuns(2) = %d runs, %v; want the 2 newest", len(got), err)
	}
	sum, err := s.Summary(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want[1], sum); diff != "" {
		t.Errorf("Summary (-want +got):\n%s", diff)
	}
}

func TestConcurrentWriters(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "runs.db")
	s1 := open(t, path)
	s2 := open(t, path) // a second handle on the same file: WAL, two writers
	r := newRun(t, s1, nil)
	const goroutines, perGoroutine = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perGoroutine)
	for g := range goroutines {
		s := s1
		if g%4 == 3 {
			s = s2
		}
		wg.Go(func() {
			for i := range perGoroutine {
				id := fmt.Sprintf("g%02d-i%03d", g, i)
				if err := s.RecordInstance(t.Context(), result(r.ID, id, "", i%2 == 0), trajectory()); err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
				}
			}
		})
	}
	// Readers run beside the writers.
	wg.Go(func() {
		for range 20 {
			if _, err := s2.Done(t.Context(), r.ID); err != nil {
				errs <- fmt.Errorf("Done: %w", err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	sum, err := s1.Summary(t.Context(), r.ID)
	if err != nil {
		t.Fatal(err)
	}
	n := goroutines * perGoroutine
	if sum.Recorded != n || sum.Passed != n/2 || sum.Failed != n/2 {
		t.Errorf("summary = %+v, want %d recorded, half passed", sum, n)
	}
	var steps int
	if err := s2.r.QueryRowContext(t.Context(), "SELECT count(*) FROM steps").Scan(&steps); err != nil || steps != 3*n {
		t.Errorf("steps = %d, %v; want %d", steps, err, 3*n)
	}
}

func TestDatabaseFull(t *testing.T) {
	t.Parallel()
	s := open(t, "")
	ctx := t.Context()
	r := newRun(t, s, nil)
	var want []InstanceResult
	for i := range 5 {
		res := result(r.ID, fmt.Sprint("i", i), "", true)
		if err := s.RecordInstance(ctx, res, trajectory()); err != nil {
			t.Fatal(err)
		}
		want = append(want, res)
	}
	// Cap the database a few pages above its size (the write pool has one
	// connection, which keeps this per-connection limit).
	pages := pragmaInt(t, s.w, "page_count")
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	big := result(r.ID, "big", "", true)
	big.Output, _ = json.Marshal(strings.Repeat("x", 64<<10))
	err := s.RecordInstance(ctx, big, trajectory())
	if !errors.Is(err, ErrFull) {
		t.Fatalf("RecordInstance on a full database = %v, want ErrFull", err)
	}
	for _, w := range []string{"full", "free disk space", "already recorded are kept", `"big"`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	got, err := s.Instances(ctx, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("instances after the failed write (-want +got):\n%s", diff)
	}
	var check string
	if err := s.r.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("integrity_check = %q, %v", check, err)
	}
	// Once there is room again, writing works.
	if _, err := s.w.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordInstance(ctx, big, nil); err != nil {
		t.Errorf("RecordInstance after freeing space: %v", err)
	}
}
