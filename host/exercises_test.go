package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/internal/testkit"
)

// exercism is the shared copy of eight exercises of Exercism's Go track:
// $NEXUS_EXERCISM_DIR, else laid beside the repository, else the
// workspace's shared datasets.
var exercism = func() string {
	candidates := []string{
		os.Getenv("NEXUS_EXERCISM_DIR"),
		filepath.Join(testkit.ModuleRoot, "..", "shared", "datasets", "exercism-go"),
		"/work/shared/datasets/exercism-go",
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	return candidates[1]
}()

// bundledExercises is the exercises task's default data.
var bundledExercises = filepath.Join(testkit.ModuleRoot, "plugins", "tasks", "exercises", "data")

// exercisesInstance is the part of an exercises instance the tests read.
type exercisesInstance struct {
	Exercise        string            `json:"exercise"`
	Instructions    string            `json:"instructions"`
	Files           map[string]string `json:"files"`
	SolutionFiles   []string          `json:"solution_files"`
	TestFiles       []string          `json:"test_files"`
	Reference       *struct{ Files map[string]string }
	DatasetRevision string `json:"dataset_revision"`
	Error           string `json:"error"`
}

// exercisesHost discovers the exercises task, oracle, nop and the shell
// tools; the task's default dir (data next to its binary) is the bundled
// exercises.
func exercisesHost(t *testing.T) *host.Host {
	t.Helper()
	root := sandboxRoot(t, "plugins/tools/shell", "plugins/tasks/exercises", "plugins/agents/oracle", "plugins/agents/nop")
	if err := os.Symlink(bundledExercises, filepath.Join(root, "exercises", "data")); err != nil {
		t.Fatal(err)
	}
	return newHost(t, root)
}

// components looks up the exercises task and the oracle and nop agents.
func components(t *testing.T, h *host.Host) (component.Task, map[string]component.Agent) {
	t.Helper()
	ctx := context.Background()
	task, err := h.Tasks.Get(ctx, "exercises")
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]component.Agent{}
	for _, name := range []string{"oracle", "nop"} {
		if agents[name], err = h.Agents.Get(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	return task, agents
}

func instancesOf(t *testing.T, task component.Task, args string) ([]component.Instance, []exercisesInstance) {
	t.Helper()
	var raw []component.Instance
	var insts []exercisesInstance
	for inst, err := range task.Instances(context.Background(), json.RawMessage(args)) {
		if err != nil {
			t.Fatalf("instances(%s): %v", args, err)
		}
		var in exercisesInstance
		if err := json.Unmarshal(inst.Data, &in); err != nil {
			t.Fatal(err)
		}
		raw, insts = append(raw, inst), append(insts, in)
	}
	return raw, insts
}

// copyTree copies the directory src to dst, dropping write protection.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestExercisesInstances(t *testing.T) {
	t.Parallel()
	h := exercisesHost(t)
	ctx := context.Background()
	task, err := h.Tasks.Get(ctx, "exercises")
	if err != nil {
		t.Fatal(err)
	}

	// The default dir is data next to the task's binary.
	entries, err := os.ReadDir(bundledExercises)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range entries {
		want = append(want, e.Name())
	}
	if len(want) < 8 {
		t.Errorf("%d bundled exercises, want at least 8", len(want))
	}
	_, insts := instancesOf(t, task, `{}`)
	var got []string
	for _, in := range insts {
		got = append(got, in.Exercise)
		switch {
		case in.Error != "":
			t.Errorf("%s: %s", in.Exercise, in.Error)
		case in.Reference == nil || len(in.Reference.Files) != 1:
			t.Errorf("%s: reference = %+v, want one solution file", in.Exercise, in.Reference)
		case in.Instructions == "" || in.Files["go.mod"] == "" || len(in.SolutionFiles) != 1 || len(in.TestFiles) != 1:
			t.Errorf("%s: incomplete instance %+v", in.Exercise, in)
		case in.DatasetRevision != insts[0].DatasetRevision || !strings.HasPrefix(in.DatasetRevision, "sha256:"):
			t.Errorf("%s: dataset revision %q, first instance %q", in.Exercise, in.DatasetRevision, insts[0].DatasetRevision)
		}
		for p := range in.Files {
			if strings.HasPrefix(p, ".") {
				t.Errorf("%s: the agent sees %s", in.Exercise, p)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("default instances (-want +got):\n%s", diff)
	}

	// The revision follows the content.
	dir := t.TempDir()
	copyTree(t, filepath.Join(bundledExercises, "snake-case"), filepath.Join(dir, "snake-case"))
	_, a := instancesOf(t, task, `{"dir":"`+dir+`"}`)
	os.WriteFile(filepath.Join(dir, "snake-case", ".docs", "instructions.md"), []byte("changed"), 0o644)
	_, b := instancesOf(t, task, `{"dir":"`+dir+`"}`)
	if a[0].DatasetRevision == b[0].DatasetRevision {
		t.Errorf("dataset revision %s did not change with the content", a[0].DatasetRevision)
	}

	// Bad arguments fail Instances.
	for _, args := range []string{`{"dir":"/nonexistent/exercises"}`, `{"dir":"` + filepath.Join(dir, "snake-case", "go.mod") + `"}`, `{"dir":"` + t.TempDir() + `"}`, `{"gocache":"relative"}`, `{"limit":1}`} {
		for _, err := range task.Instances(ctx, json.RawMessage(args)) {
			if err == nil {
				t.Errorf("instances(%s) yields an instance, want an error", args)
			}
			break
		}
	}
}

// TestExercisesMalformed: a malformed exercise is yielded with the reason
// and evaluates to a task_error; the others are untouched.
func TestExercisesMalformed(t *testing.T) {
	t.Parallel()
	h := exercisesHost(t)
	ctx := context.Background()
	task, err := h.Tasks.Get(ctx, "exercises")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"no-gomod", "bad-config", "no-solution", "good"} {
		copyTree(t, filepath.Join(bundledExercises, "bracket-depth"), filepath.Join(dir, name))
	}
	os.Remove(filepath.Join(dir, "no-gomod", "go.mod"))
	os.WriteFile(filepath.Join(dir, "bad-config", ".meta", "config.json"), []byte("{"), 0o644)
	os.Remove(filepath.Join(dir, "no-solution", ".meta", "config.json"))
	os.Remove(filepath.Join(dir, "no-solution", "bracket_depth.go"))
	args := `{"dir":"` + dir + `"}`
	raw, insts := instancesOf(t, task, args)
	wantErr := map[string]string{"bad-config": "config.json", "good": "", "no-gomod": "no go.mod", "no-solution": "no solution file"}
	if len(insts) != len(wantErr) {
		t.Fatalf("%d instances, want %d", len(insts), len(wantErr))
	}
	for i, in := range insts {
		w := wantErr[in.Exercise]
		if w == "" && in.Error != "" || !strings.Contains(in.Error, w) {
			t.Errorf("%s: error %q, want one containing %q", in.Exercise, in.Error, w)
		}
		if w == "" {
			continue
		}
		e, ectx := newExec(t, h)
		_, err := task.Evaluate(ectx, json.RawMessage(args), raw[i], json.RawMessage(`{}`))
		e.Close()
		if ce, ok := errors.AsType[*component.Error](err); !ok || ce.Code != "task_error" || !strings.Contains(ce.Message, w) {
			t.Errorf("%s: evaluate error = %v, want a task_error containing %q", in.Exercise, err, w)
		}
	}
}

// warmCache returns a directory for a Go build cache the sandbox can read
// (the sandbox hides the host's /tmp), or "" when there is none.
func warmCache(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "nexus-gocache-*")
	if err != nil {
		t.Logf("no warm Go cache (evaluations start cold): %v", err)
		return ""
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// goTestPasses runs go test on each exercise's untouched files on the
// host, as a reference for what nop must score. With cache set, it warms
// that build cache the way the task's evaluations will use it.
func goTestPasses(t *testing.T, insts []exercisesInstance, cache string) map[string]bool {
	t.Helper()
	if cache == "" {
		cache = t.TempDir()
	}
	defer func() {
		// Readable by the sandbox's user.
		filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
			if err == nil {
				mode := os.FileMode(0o644)
				if d.IsDir() {
					mode = 0o755
				}
				os.Chmod(p, mode)
			}
			return nil
		})
	}()
	passes := map[string]bool{}
	for _, in := range insts {
		dir := t.TempDir()
		for p, c := range in.Files {
			os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command("go", "test", "-count=1", "./...")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOCACHE="+cache, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0")
		passes[in.Exercise] = cmd.Run() == nil
	}
	return passes
}

// TestExercisesOracleAndNop does what a run does for every instance: a
// fresh execution, the agent, then Evaluate in the same execution.
// Oracle must pass every exercise; nop must score what go test on the
// untouched stubs scores.
func TestExercisesOracleAndNop(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(exercism); err != nil {
		t.Fatalf("the shared Exercism exercises are missing (%v): set NEXUS_EXERCISM_DIR, or lay them beside the repository as ../shared/datasets/exercism-go", err)
	}
	own := t.TempDir()
	for _, name := range []string{"bracket-depth", "quarter-hour"} {
		copyTree(t, filepath.Join(bundledExercises, name), filepath.Join(own, name))
	}
	h := exercisesHost(t)
	ctx := context.Background()
	task, agents := components(t, h)
	// Every evaluation seeds its fresh build cache from a warm one (the
	// task's gocache argument): cold, go test takes 10-30 s per exercise.
	cache := warmCache(t)
	for _, tc := range []struct{ name, dir string }{{"bundled", own}, {"exercism", exercism}} {
		t.Run(tc.name, func(t *testing.T) {
			raw, insts := instancesOf(t, task, `{"dir":"`+tc.dir+`"}`)
			stubs := goTestPasses(t, insts, cache)
			args := json.RawMessage(`{"dir":"` + tc.dir + `","gocache":"` + cache + `"}`)
			type outcome struct {
				passed bool
				took   time.Duration
			}
			var mu sync.Mutex
			results := map[string]map[string]outcome{"oracle": {}, "nop": {}}
			var wg sync.WaitGroup
			// Two at a time: go test is CPU-bound.
			sem := make(chan struct{}, 2)
			for _, agentName := range []string{"oracle", "nop"} {
				agent := agents[agentName]
				for i, inst := range raw {
					if insts[i].Error != "" {
						t.Fatalf("%s: %s", inst.ID, insts[i].Error)
					}
					wg.Go(func() {
						sem <- struct{}{}
						defer func() { <-sem }()
						start := time.Now()
						e, err := h.NewExecution(host.ExecutionOptions{RunID: "test", InstanceID: inst.ID, Task: "exercises", TaskArgs: args})
						if err != nil {
							t.Error(err)
							return
						}
						defer e.Close()
						ectx := execution.With(ctx, e)
						out, err := agent.Run(ectx, inst.Data)
						if err != nil {
							t.Errorf("%s: %s: %v", agentName, inst.ID, err)
							return
						}
						res, err := task.Evaluate(ectx, args, inst, out)
						if err != nil {
							t.Errorf("%s: %s: evaluate: %v", agentName, inst.ID, err)
							return
						}
						if agentName == "oracle" && !res.Passed {
							t.Errorf("oracle failed %s: %s", inst.ID, res.Details)
						}
						mu.Lock()
						results[agentName][inst.ID] = outcome{res.Passed, time.Since(start)}
						mu.Unlock()
					})
				}
			}
			wg.Wait()
			nop := map[string]bool{}
			for id, o := range results["nop"] {
				nop[id] = o.passed
			}
			if diff := cmp.Diff(stubs, nop); diff != "" {
				t.Errorf("nop's results differ from go test on the untouched stubs (-stubs +nop):\n%s", diff)
			}
			if n := len(results["oracle"]); n != len(raw) {
				t.Errorf("oracle evaluated %d of %d instances", n, len(raw))
			}
			for _, agentName := range []string{"oracle", "nop"} {
				ids := slices.Sorted(func(yield func(string) bool) {
					for id := range results[agentName] {
						if !yield(id) {
							return
						}
					}
				})
				for _, id := range ids {
					o := results[agentName][id]
					t.Logf("%s %s: passed=%v in %v", agentName, id, o.passed, o.took.Round(time.Millisecond))
				}
			}
		})
	}
}
