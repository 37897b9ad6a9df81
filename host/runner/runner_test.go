package runner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/runner"
	"github.com/nexus-eval/nexus/host/store"
	"github.com/nexus-eval/nexus/host/validate"
	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/manifest"
)

const (
	pkgArith  = "plugins/tasks/arith"
	pkgOracle = "plugins/agents/oracle"
	pkgEcho   = "test/testplugins/echo"
	pkgCrashy = "test/testplugins/crashy"
)

var builder *testkit.Builder

func TestMain(m *testing.M) {
	testkit.Main(m, func(b *testkit.Builder) error {
		builder = b
		return nil
	})
}

// pluginRoot lays out the given plugin packages in a fresh root.
func pluginRoot(t *testing.T, pkgs ...string) string { return builder.Root(t, pkgs...) }

// newHost discovers root with the local runtime and the given plugin
// environment, and closes the host when the test ends.
func newHost(t *testing.T, root string, env ...string) *host.Host {
	t.Helper()
	h := host.New(host.Options{Runtime: "local", PluginEnv: env})
	for _, d := range h.Discover([]manifest.Root{{Dir: root, Explicit: true}}) {
		t.Logf("diagnostic: %s", d)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// brief is what tests compare of an instance: everything but timing.
type brief struct {
	ID         string
	Passed     bool
	Score      float64
	ErrorClass string
}

func briefs(s *runner.Summary) []brief {
	var out []brief
	for _, in := range s.Instances {
		out = append(out, brief{in.ID, in.Passed, in.Score, in.ErrorClass})
	}
	return out
}

func passing(ids ...string) []brief {
	var out []brief
	for _, id := range ids {
		out = append(out, brief{id, true, 1, ""})
	}
	return out
}

func seqIDs(from, to int) []string {
	var ids []string
	for i := from; i <= to; i++ {
		ids = append(ids, fmt.Sprintf("s-%03d", i))
	}
	return ids
}

// agentLog reads the ids the crashy agent logged, in order.
func agentLog(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(data))
}

func TestOracleAllPass(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgArith, pkgOracle))
	st := openStore(t)
	var progress []runner.Progress
	sum, err := runner.Run(t.Context(), runner.Config{
		Host: h, Store: st, Task: "arith", Agent: "oracle", TaskArgs: json.RawMessage(`{"n": 20}`),
		Concurrency: 4, Progress: func(p runner.Progress) { progress = append(progress, p) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Total != 20 || sum.Passed != 20 || sum.Failed != 0 || sum.PassRate != 1 || sum.MeanScore != 1 ||
		sum.Status != store.StatusCompleted || sum.Planned != 20 || sum.Ran != 20 || len(sum.Errors) != 0 {
		t.Errorf("summary = %+v, want 20/20 passed and completed", sum)
	}
	if len(progress) != 20 || progress[19].Done != 20 || progress[19].Passed != 20 {
		t.Errorf("progress: %d calls, last %+v; want 20, the last with 20 done and passed", len(progress), progress[len(progress)-1])
	}
	r, err := st.GetRun(t.Context(), sum.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Plugins) != 2 || r.Plugins[0].Name != "arith" || r.Plugins[1].Name != "oracle" {
		t.Fatalf("plugins = %+v, want arith and oracle", r.Plugins)
	}
	for _, p := range r.Plugins {
		if len(p.SHA256) != 64 || p.Protocol != 1 || p.Version == "" {
			t.Errorf("plugin ref %+v: want a sha256, protocol 1 and a version", p)
		}
	}
	key, err := store.IdempotencyKey(r.KeyParts())
	if err != nil || r.IdempotencyKey != key || r.HostVersion == "" || r.Total != 20 {
		t.Errorf("run = %+v (key err %v), want its key, a host version and total 20", r, err)
	}
}

func TestLimitAndConcurrency(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgArith, pkgOracle))
	st := openStore(t)
	var got [][]brief
	for _, c := range []int{1, 4} {
		sum, err := runner.Run(t.Context(), runner.Config{
			Host: h, Store: st, Task: "arith", Agent: "oracle", TaskArgs: json.RawMessage(`{"n": 50, "seed": 3}`),
			Concurrency: c, Limit: 7,
		})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Total != 7 || sum.Planned != 7 {
			t.Errorf("concurrency %d: total %d, planned %d; want 7 (the limit)", c, sum.Total, sum.Planned)
		}
		got = append(got, briefs(sum))
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("concurrency 1 and 4 differ (-1 +4):\n%s", diff)
	}
	want := passing("arith-0001", "arith-0002", "arith-0003", "arith-0004", "arith-0005", "arith-0006", "arith-0007")
	if diff := cmp.Diff(want, got[0]); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
}

func TestEchoCountWithParrot(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgEcho))
	sum, err := runner.Run(t.Context(), runner.Config{Host: h, Store: openStore(t), Task: "count", Agent: "parrot", TaskArgs: json.RawMessage(`{"n": 4}`)})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(passing("echo-0", "echo-1", "echo-2", "echo-3"), briefs(sum)); diff != "" {
		t.Errorf("instances (-want +got):\n%s", diff)
	}
	if len(sum.Plugins) != 1 || sum.Plugins[0].Name != "echo" {
		t.Errorf("plugins = %+v, want echo once (task and agent share it)", sum.Plugins)
	}
}

func TestInstanceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     []string
		timeout time.Duration
		bad     brief
		errText string
	}{
		{"agent crash", []string{"CRASHY_CRASH=s-003"}, 0, brief{"s-003", false, 0, store.ErrorAgent}, "exit status 3"},
		{"timeout", []string{"CRASHY_BLOCK=s-003"}, 300 * time.Millisecond, brief{"s-003", false, 0, store.ErrorTimeout}, "timed out after 300ms"},
		{"malformed instance", []string{"CRASHY_BAD=s-003"}, 0, brief{"s-003", false, 0, store.ErrorTask}, "malformed instance s-003"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := filepath.Join(t.TempDir(), "agent.log")
			h := newHost(t, pluginRoot(t, pkgCrashy), append(tt.env, "CRASHY_LOG="+log)...)
			// Concurrency 1: a crash takes down every call in flight in
			// the agent's process, and this test wants exactly one.
			sum, err := runner.Run(t.Context(), runner.Config{
				Host: h, Store: openStore(t), Task: "seq", Agent: "crashy", TaskArgs: json.RawMessage(`{"n": 6}`),
				Concurrency: 1, Timeout: tt.timeout,
			})
			if err != nil {
				t.Fatal(err)
			}
			want := passing(seqIDs(1, 6)...)
			want[2] = tt.bad
			if diff := cmp.Diff(want, briefs(sum)); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
			if !strings.Contains(sum.Instances[2].Error, tt.errText) {
				t.Errorf("error of s-003 = %q, want it to mention %q", sum.Instances[2].Error, tt.errText)
			}
			if sum.Status != store.StatusCompleted || sum.Errors[tt.bad.ErrorClass] != 1 || sum.Failed != 1 || sum.Errored != 1 {
				t.Errorf("summary = %+v, want completed with one %s", sum, tt.bad.ErrorClass)
			}
			if tt.bad.ErrorClass == store.ErrorTask && slices.Contains(agentLog(t, log), "s-003") {
				t.Errorf("the agent ran on the malformed instance")
			}
		})
	}
}

// cancelWhenLogged cancels ctx once the crashy agent logged id.
func cancelWhenLogged(t *testing.T, ctx context.Context, cancel context.CancelFunc, log, id string) (wait func()) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if data, _ := os.ReadFile(log); slices.Contains(strings.Fields(string(data)), id) {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
	return wg.Wait
}

func TestCancelThenResume(t *testing.T) {
	t.Parallel()
	root := pluginRoot(t, pkgCrashy)
	st := openStore(t)
	log := filepath.Join(t.TempDir(), "agent.log")
	cfg := runner.Config{Store: st, Task: "seq", Agent: "crashy", TaskArgs: json.RawMessage(`{"n": 6}`), Concurrency: 1}

	// The agent blocks on s-004 until the run is cancelled.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wait := cancelWhenLogged(t, ctx, cancel, log, "s-004")
	first := cfg
	first.Host = newHost(t, root, "CRASHY_BLOCK=s-004", "CRASHY_LOG="+log)
	sum, err := runner.Run(ctx, first)
	wait()
	if !errors.Is(err, runner.ErrInterrupted) || !errors.Is(err, context.Canceled) || sum == nil {
		t.Fatalf("Run = %v, %v; want a summary and ErrInterrupted", sum, err)
	}
	if !strings.Contains(err.Error(), "--resume "+sum.RunID) {
		t.Errorf("error %q does not say how to resume", err)
	}
	want := append(passing(seqIDs(1, 3)...), brief{"s-004", false, 0, store.ErrorCancelled})
	if diff := cmp.Diff(want, briefs(sum)); diff != "" {
		t.Errorf("instances after cancel (-want +got):\n%s", diff)
	}
	if sum.Status != store.StatusInterrupted || sum.Planned != 0 {
		t.Errorf("status %q, planned %d; want interrupted, unknown total", sum.Status, sum.Planned)
	}
	if got := agentLog(t, log); !slices.Equal(got, seqIDs(1, 4)) {
		t.Errorf("agent ran %v, want s-001..s-004", got)
	}

	// Resuming the same command (--resume without an id) finds the run by
	// its idempotency key and runs only what is left.
	os.Remove(log)
	again := cfg
	again.Host = newHost(t, root, "CRASHY_LOG="+log)
	again.ResumeLatest = true
	sum2, err := runner.Run(t.Context(), again)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentLog(t, log); !slices.Equal(got, seqIDs(4, 6)) {
		t.Errorf("resumed run ran %v, want only s-004..s-006", got)
	}
	if sum2.RunID != sum.RunID || !sum2.Resumed || sum2.Ran != 3 || sum2.Skipped != 3 || sum2.Status != store.StatusCompleted || sum2.Planned != 6 {
		t.Errorf("resumed summary = %+v, want run %s resumed: 3 ran, 3 skipped, completed", sum2, sum.RunID)
	}
	if diff := cmp.Diff(passing(seqIDs(1, 6)...), briefs(sum2)); diff != "" {
		t.Errorf("instances after resume (-want +got):\n%s", diff)
	}

	// Resuming a finished run by id runs nothing.
	os.Remove(log)
	byID := runner.Config{Host: again.Host, Store: st, Resume: sum.RunID}
	sum3, err := runner.Run(t.Context(), byID)
	if err != nil {
		t.Fatal(err)
	}
	if got := agentLog(t, log); len(got) != 0 || sum3.Ran != 0 || sum3.Total != 6 {
		t.Errorf("resuming a finished run ran %v (summary %+v), want nothing", got, sum3)
	}
}

func TestResumeRefusesChanges(t *testing.T) {
	t.Parallel()
	root := pluginRoot(t, pkgCrashy)
	st := openStore(t)
	ctx := t.Context()
	sum, err := runner.Run(ctx, runner.Config{Host: newHost(t, root), Store: st, Task: "seq", Agent: "crashy", TaskArgs: json.RawMessage(`{"n": 2}`)})
	if err != nil {
		t.Fatal(err)
	}

	// The dataset changed: the task reports another revision.
	resume := runner.Config{Host: newHost(t, root, "CRASHY_REVISION=r2"), Store: st, Resume: sum.RunID}
	_, err = runner.Run(ctx, resume)
	if !errors.Is(err, runner.ErrChanged) || !strings.Contains(err.Error(), `dataset revision "r1" is now "r2"`) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("resume after a dataset change = %v, want ErrChanged naming the revisions and --force", err)
	}
	resume.Force = true
	forced, err := runner.Run(ctx, resume)
	if err != nil {
		t.Fatalf("forced resume: %v", err)
	}
	if len(forced.Notes) != 1 || !strings.Contains(forced.Notes[0], "dataset revision") {
		t.Errorf("notes = %q, want one about the dataset revision", forced.Notes)
	}

	// The plugin binary changed: another file, same behaviour.
	changed := t.TempDir()
	dir, err := builder.PluginDir(changed, pkgCrashy)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "crashy")
	os.Remove(bin) // a hard link to the shared build: replace it by a copy
	src, _ := builder.Binary(pkgCrashy)
	if err := testkit.CopyFile(src, bin); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(bin, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\x00rebuilt")
	f.Close()
	_, err = runner.Run(ctx, runner.Config{Host: newHost(t, changed), Store: st, Resume: sum.RunID})
	if !errors.Is(err, runner.ErrChanged) || !strings.Contains(err.Error(), `plugin "crashy" binary changed`) {
		t.Errorf("resume after a plugin change = %v, want ErrChanged naming the plugin", err)
	}

	// A different task or task args is never the same run.
	_, err = runner.Run(ctx, runner.Config{Host: newHost(t, root), Store: st, Resume: sum.RunID, TaskArgs: json.RawMessage(`{"n": 3}`)})
	if err == nil || !strings.Contains(err.Error(), `task args {"n": 2}, not {"n": 3}`) {
		t.Errorf("resume with other args = %v, want a refusal naming both", err)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgArith, pkgOracle))
	st := openStore(t)
	tests := []struct {
		name         string
		task, agent  string
		args         string
		want         error
		wantContains string
	}{
		{"unknown task", "arth", "oracle", "", component.ErrNotFound, `did you mean "arith"?`},
		{"unknown agent", "arith", "oracel", "", component.ErrNotFound, `did you mean "oracle"?`},
		{"args the task rejects", "arith", "oracle", `{"n": -1}`, nil, "invalid_argument: n is -1"},
		{"args the schema rejects", "arith", "oracle", `{"n": "five"}`, validate.ErrInvalidInput, "invalid task arguments at /n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sum, err := runner.Run(t.Context(), runner.Config{Host: h, Store: st, Task: tt.task, Agent: tt.agent, TaskArgs: json.RawMessage(tt.args)})
			if err == nil || sum != nil || (tt.want != nil && !errors.Is(err, tt.want)) || !strings.Contains(err.Error(), tt.wantContains) {
				t.Errorf("Run = %v, %v; want an error containing %q", sum, err, tt.wantContains)
			}
		})
	}
	runs, err := st.ListRuns(t.Context(), 0)
	if err != nil || len(runs) != 0 {
		t.Errorf("runs recorded after refusals: %v, %v; want none", runs, err)
	}
}

func TestDatabaseFailureStopsRun(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgArith, pkgOracle))
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	sum, err := runner.Run(t.Context(), runner.Config{
		Host: h, Store: st, Task: "arith", Agent: "oracle", TaskArgs: json.RawMessage(`{"n": 200}`), Concurrency: 2,
		Progress: func(runner.Progress) { once.Do(func() { st.Close() }) },
	})
	if err == nil || sum != nil {
		t.Fatalf("Run with a closed database = %v, %v; want an error", sum, err)
	}
	t.Logf("error: %v", err)
}

func TestSummaryJSON(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, pkgCrashy))
	sum, err := runner.Run(t.Context(), runner.Config{Host: h, Store: openStore(t), Task: "seq", Agent: "crashy",
		TaskArgs: json.RawMessage(`{"n": 2}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RunID     string         `json:"run_id"`
		Task      string         `json:"task"`
		Agent     string         `json:"agent"`
		Total     *int           `json:"total"`
		Passed    *int           `json:"passed"`
		Failed    *int           `json:"failed"`
		PassRate  *float64       `json:"pass_rate"`
		Errors    map[string]int `json:"errors"`
		Instances []map[string]any
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.RunID == "" || got.Task != "seq" || got.Agent != "crashy" || got.Total == nil || *got.Total != 2 ||
		got.Passed == nil || got.Failed == nil || got.PassRate == nil || got.Errors == nil {
		t.Errorf("summary JSON %s lacks a required field", b)
	}
	keys := []string{"duration_ms", "error_class", "id", "passed", "score", "tokens"}
	for _, in := range got.Instances {
		var have []string
		for k := range in {
			have = append(have, k)
		}
		if diff := cmp.Diff(keys, have, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
			t.Errorf("instance keys (-want +got):\n%s", diff)
		}
	}
}
