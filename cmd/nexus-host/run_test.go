package main_test

// End-to-end tests of `nexus-host run` and `nexus-host runs`: the real
// binary, real plugins, a database in the test's directory.

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// runJSON is what `run -o json` and `runs show -o json` print (the parts
// the tests read).
type runJSON struct {
	RunID     string         `json:"run_id"`
	Task      string         `json:"task"`
	Agent     string         `json:"agent"`
	Status    string         `json:"status"`
	Total     *int           `json:"total"`
	Passed    *int           `json:"passed"`
	Failed    *int           `json:"failed"`
	PassRate  *float64       `json:"pass_rate"`
	Errors    map[string]int `json:"errors"`
	Resumed   bool           `json:"resumed"`
	Skipped   int            `json:"skipped"`
	Instances []struct {
		ID         string   `json:"id"`
		Passed     *bool    `json:"passed"`
		Score      *float64 `json:"score"`
		ErrorClass *string  `json:"error_class"`
		DurationMS *int64   `json:"duration_ms"`
	} `json:"instances"`
}

func decodeRun(t *testing.T, out string) runJSON {
	t.Helper()
	var r runJSON
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", out)
	}
	if r.RunID == "" || r.Total == nil || r.Passed == nil || r.Failed == nil || r.PassRate == nil || r.Errors == nil {
		t.Fatalf("run JSON lacks a required field:\n%s", out)
	}
	for _, in := range r.Instances {
		if in.ID == "" || in.Passed == nil || in.Score == nil || in.ErrorClass == nil || in.DurationMS == nil {
			t.Fatalf("instance JSON lacks a required field:\n%s", out)
		}
	}
	return r
}

func TestRunArithOracle(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgArith, pkgOracle)
	db := s.path("runs.db")
	base := []string{"--plugins", root, "--runtime", "local"}

	r := s.run(append(base, "run", "--task", "arith", "--agent", "oracle", "--task-arg", "n=5", "--db", db, "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	got := decodeRun(t, r.stdout)
	if got.Task != "arith" || got.Agent != "oracle" || *got.Total != 5 || *got.Passed != 5 || *got.Failed != 0 ||
		*got.PassRate != 1 || len(got.Errors) != 0 || len(got.Instances) != 5 || got.Status != "completed" {
		t.Errorf("run JSON = %+v, want 5/5 passed", got)
	}

	// runs list
	r = s.run(append(base, "runs", "list", "--db", db)...)
	if r.code != 0 || !strings.Contains(r.stdout, got.RunID) || !strings.Contains(r.stdout, "completed") {
		t.Errorf("runs list: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = s.run(append(base, "runs", "list", "--db", db, "-o", "json")...)
	var list []struct {
		ID       string `json:"id"`
		Recorded int    `json:"recorded"`
		Passed   int    `json:"passed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) != 1 || list[0].ID != got.RunID || list[0].Recorded != 5 || list[0].Passed != 5 {
		t.Errorf("runs list -o json = %v (%v), want the run with 5 passed", list, err)
	}

	// runs show
	r = s.run(append(base, "runs", "show", got.RunID, "--db", db)...)
	if r.code != 0 || !strings.Contains(r.stdout, "pass rate   100.0%") || strings.Count(r.stdout, "arith-000") != 5 ||
		!regexp.MustCompile(`INSTANCE +PASSED +SCORE +ERROR +DURATION +TOKENS`).MatchString(r.stdout) {
		t.Errorf("runs show: exit %d, stdout:\n%s", r.code, r.stdout)
	}
	r = s.run(append(base, "runs", "show", got.RunID, "--db", db, "-o", "json")...)
	if shown := decodeRun(t, r.stdout); shown.RunID != got.RunID || *shown.Passed != 5 {
		t.Errorf("runs show -o json = %+v", shown)
	}

	// runs export
	for _, format := range []string{"jsonl", "atif"} {
		r = s.run(append(base, "runs", "export", got.RunID, "--format", format, "--db", db)...)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		if r.code != 0 || len(lines) != 5 {
			t.Fatalf("export %s: exit %d, %d lines:\n%s", format, r.code, len(lines), r.stdout)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
			t.Fatalf("export %s: line 1 is not JSON: %v", format, err)
		}
		switch format {
		case "jsonl":
			if doc["instance_id"] != "arith-0001" || doc["passed"] != true || doc["task"] != "arith" {
				t.Errorf("jsonl line 1 = %v", doc)
			}
		case "atif":
			if doc["schema_version"] != "ATIF-v1.7" || doc["session_id"] != got.RunID {
				t.Errorf("atif line 1 = %v", doc)
			}
		}
	}
	out := s.path("export.jsonl")
	r = s.run(append(base, "runs", "export", got.RunID, "--format", "jsonl", "--db", db, "-o", out)...)
	if data, err := os.ReadFile(out); r.code != 0 || err != nil || bytes.Count(data, []byte("\n")) != 5 {
		t.Errorf("export -o FILE: exit %d, file %v:\n%s", r.code, err, data)
	}
	r = s.run(append(base, "runs", "show", "nope", "--db", db)...)
	if r.code != 1 || !strings.Contains(r.stderr, `run "nope": not found`) {
		t.Errorf("runs show of an unknown run: exit %d, stderr:\n%s", r.code, r.stderr)
	}
}

func TestRunRefusals(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgArith, pkgOracle)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown task", []string{"--task", "arth", "--agent", "oracle"}, `task "arth": not found: did you mean "arith"?`},
		{"unknown agent", []string{"--task", "arith", "--agent", "orcle"}, `agent "orcle": not found: did you mean "oracle"?`},
		{"task arg the task rejects", []string{"--task", "arith", "--agent", "oracle", "--task-arg", "n=-1"}, "invalid_argument: n is -1: it must be between 1 and 10000"},
		{"task arg the schema rejects", []string{"--task", "arith", "--agent", "oracle", "--task-arg", "n=five"}, `invalid task arguments at /n`},
		{"malformed task arg", []string{"--task", "arith", "--agent", "oracle", "--task-arg", "n"}, `--task-arg "n": use KEY=VALUE`},
		{"no agent", []string{"--task", "arith"}, "run needs --task and --agent"},
		{"bad runtime", []string{"--task", "arith", "--agent", "oracle", "--runtime", "vm"}, `--runtime "vm": use sandbox or local`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := s.path(strings.ReplaceAll(tt.name, " ", "-") + ".db")
			args := append([]string{"--plugins", root, "--runtime", "local", "run", "--db", db}, tt.args...)
			r := s.run(args...)
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || r.stdout != "" {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 1 and %q", r.code, r.stdout, r.stderr, tt.want)
			}
		})
	}
}

func TestRunDatabaseRefused(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgArith, pkgOracle)
	run := func(db string) result {
		return s.run("--plugins", root, "--runtime", "local", "run", "--task", "arith", "--agent", "oracle", "--task-arg", "n=2", "--db", db)
	}

	// The subtests share one sandbox, whose leftover-process check would
	// see the other's nexus-host: they run one after the other.
	t.Run("corrupt", func(t *testing.T) {
		db := s.path("corrupt.db")
		content := "these are not the runs you are looking for\n"
		s.write(db, content, 0o644)
		r := run(db)
		if r.code != 1 || !strings.Contains(r.stderr, "not a SQLite database") || !strings.Contains(r.stderr, "was not modified") {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		if data, _ := os.ReadFile(db); string(data) != content {
			t.Errorf("the corrupt database was modified: %q", data)
		}
	})

	t.Run("locked", func(t *testing.T) {
		db := s.path("locked.db")
		if r := run(db); r.code != 0 {
			t.Fatalf("first run: exit %d\n%s", r.code, r.stderr)
		}
		before, err := os.ReadFile(db)
		if err != nil {
			t.Fatal(err)
		}
		// Another process holds an exclusive lock (as a crashed writer's
		// stuck transaction would).
		conn, err := sql.Open("sqlite", "file:"+db+"?_pragma=locking_mode(EXCLUSIVE)")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetMaxOpenConns(1)
		if _, err := conn.Exec("BEGIN EXCLUSIVE"); err != nil {
			t.Fatal(err)
		}
		defer conn.Exec("ROLLBACK")
		r := run(db)
		if r.code != 1 || !strings.Contains(r.stderr, "database is locked") || !strings.Contains(r.stderr, "pass another --db") {
			t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
			t.Errorf("the locked database was modified")
		}
	})
}

// TestRunInterruptThenResume sends SIGINT during a run, then resumes it
// with a bare --resume.
func TestRunInterruptThenResume(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgArith, pkgOracle)
	db := s.path("runs.db")
	args := []string{"--plugins", root, "--runtime", "local", "run", "--task", "arith", "--agent", "oracle",
		"--task-arg", "n=2000", "--concurrency", "1", "--db", db, "-o", "json"}

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hostBin, args...)
	cmd.Dir = s.cwd
	cmd.Env = baseEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once a few instances are recorded.
	waitFor(t, func() bool { return countInstances(db) > 20 })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("interrupted run: %v, want exit 1\nstderr:\n%s", err, stderr.String())
	}
	got := decodeRun(t, stdout.String())
	if got.Status != "interrupted" || *got.Total == 0 || *got.Total >= 2000 || !strings.Contains(stderr.String(), "--resume "+got.RunID) {
		t.Fatalf("interrupted run: %+v\nstderr:\n%s", got, stderr.String())
	}
	s.assertNoLeftovers()

	r := s.run(append(args[:len(args)-2], "--resume", "-o", "json")...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	again := decodeRun(t, r.stdout)
	if again.RunID != got.RunID || !again.Resumed || again.Status != "completed" || *again.Total != 2000 || *again.Passed != 2000 ||
		again.Skipped < *got.Total-got.Errors["cancelled"] {
		t.Errorf("resumed run: %+v, want run %s completed with 2000 passed", again, got.RunID)
	}
}

func countInstances(db string) int {
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(1000)")
	if err != nil {
		return 0
	}
	defer conn.Close()
	var n int
	if conn.QueryRow("SELECT count(*) FROM instances").Scan(&n) != nil {
		return 0
	}
	return n
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRunPlainProgress: without a terminal, progress is plain lines on
// stderr and the summary goes to stdout.
func TestRunTextSummary(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("plugins", pkgEcho)
	r := s.run("--plugins", root, "--runtime", "local", "run", "--task", "count", "--agent", "parrot", "--task-arg", "n=4", "--db", s.path("runs.db"))
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want := []string{"instances   4 (4 passed, 0 failed)", "pass rate   100.0%", "mean score  1.000", "errors      none", "duration    p50 ", "tokens      0", "details: nexus-host runs show "}
	for _, w := range want {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("summary lacks %q:\n%s", w, r.stdout)
		}
	}
	if strings.Contains(r.stderr, "\r") {
		t.Errorf("a progress bar was drawn without a terminal:\n%q", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(s.cwd, ".nexus")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--db elsewhere, yet .nexus was created in the working directory")
	}
}
