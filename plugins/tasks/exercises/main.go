// Command exercises is a Nexus task plugin serving the task exercises: one
// instance per Exercism-style Go exercise in a directory. An agent edits the
// exercise's solution files in the instance's work dir (through the shell
// runtime tools); Evaluate restores the exercise's own tests and go.mod in
// that work dir and runs `go test` there, inside the instance's sandbox.
//
// An exercise is a subdirectory holding go.mod, a stub solution, tests,
// and optionally .docs/instructions.md (with introduction.md and
// instructions.append.md around it) and .meta/config.json naming its files
// like Exercism's ({"files": {"solution": [...], "test": [...], "example":
// [...]}}). Without config.json the solution files are the non-test .go
// files and the tests the *_test.go files, and the reference is
// .meta/example.go when it exists and there is one solution file.
//
// A bad dir argument fails Instances; a malformed exercise (no go.mod, an
// unreadable config, no solution file...) is yielded anyway with an
// "error" field, and Evaluate reports it as a task_error, so a run goes on.
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

const (
	// testTimeoutS bounds one `go test` run.
	testTimeoutS = 300
	// maxFile and maxExercise cap what an instance carries.
	maxFile     = 1 << 20
	maxExercise = 4 << 20
	// maxDetails caps the test output kept in a result.
	maxDetails = 4 << 10
	// evalDir is where Evaluate keeps the Go caches in the work dir; it is
	// emptied before every run so an agent cannot plant cache entries.
	evalDir = ".nexus-eval"
)

type args struct {
	Dir     string `json:"dir,omitempty" jsonschema:"the directory of exercises, one per subdirectory; default: the directory data next to the task's binary. A relative path is resolved against the plugin's directory, so give an absolute one"`
	GoCache string `json:"gocache,omitempty" jsonschema:"an absolute directory holding a warm Go build cache, visible read-only inside the sandbox; each evaluation copies it into its own fresh cache before go test. Default: none (every evaluation starts cold)"`
}

// instance is one exercise as the agent sees it.
type instance struct {
	Exercise     string `json:"exercise"`
	Instructions string `json:"instructions,omitempty"`
	// Files are what the agent should see: stub, tests, go.mod and any
	// other file outside the exercise's dot-directories, by slash path.
	Files map[string]string `json:"files,omitempty"`
	// SolutionFiles are the files the agent is to write; every other file
	// of Files is restored before the tests run.
	SolutionFiles []string `json:"solution_files,omitempty"`
	TestFiles     []string `json:"test_files,omitempty"`
	// Reference is the exercise's example solution, when there is one.
	Reference *reference `json:"reference,omitempty"`
	// DatasetRevision is the content hash of the whole exercise directory,
	// the same in every instance.
	DatasetRevision string `json:"dataset_revision"`
	// Error says why the exercise is malformed; Evaluate then fails with
	// a task_error.
	Error string `json:"error,omitempty"`
}

type reference struct {
	// Files maps each solution path to its reference content.
	Files map[string]string `json:"files"`
}

// output is informational: the agent's real work is in the work dir.
type output map[string]any

type details struct {
	ExitCode int    `json:"exit_code"`
	TimedOut bool   `json:"timed_out,omitempty"`
	Passed   int    `json:"tests_passed"`
	Failed   int    `json:"tests_failed"`
	Output   string `json:"output"`
}

type task struct {
	// goBin is the absolute path of the go command run in the sandbox.
	goBin string
}

var _ sdk.TaskHandler[args, instance, output] = (*task)(nil)

// findGo returns the absolute path of the go command: the one in PATH,
// else /usr/local/go/bin/go.
func findGo() string {
	candidates := []string{}
	if p, err := exec.LookPath("go"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/local/go/bin/go")
	for _, c := range candidates {
		if abs, err := filepath.Abs(c); err == nil {
			if fi, err := os.Stat(abs); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
				return abs
			}
		}
	}
	return ""
}

// dataDir resolves the dir argument.
func dataDir(a args) (string, error) {
	dir := a.Dir
	if dir == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the task's binary for the default dir: %w", err)
		}
		dir = filepath.Join(filepath.Dir(exe), "data")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(dir)
	switch {
	case err != nil:
		return "", sdk.Errorf("invalid_argument", "dir %s: %v: give a directory of exercises", dir, errors.Unwrap(err))
	case !fi.IsDir():
		return "", sdk.Errorf("invalid_argument", "dir %s is not a directory: give a directory of exercises", dir)
	}
	return dir, nil
}

func (t *task) Instances(ctx context.Context, a args, yield func(string, instance) error) error {
	if a.GoCache != "" && !filepath.IsAbs(a.GoCache) {
		return sdk.Errorf("invalid_argument", "gocache %q is relative: give an absolute directory", a.GoCache)
	}
	dir, err := dataDir(a)
	if err != nil {
		return err
	}
	rev, err := revision(dir)
	if err != nil {
		return sdk.Errorf("invalid_argument", "dir %s: %v", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return sdk.Errorf("invalid_argument", "dir %s: %v", dir, err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(e.Name(), "_") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return sdk.Errorf("invalid_argument", "dir %s holds no exercise: give a directory with one subdirectory per exercise", dir)
	}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return err
		}
		inst, err := load(filepath.Join(dir, name))
		if err != nil {
			inst = instance{Error: err.Error()}
		}
		inst.Exercise, inst.DatasetRevision = name, rev
		if err := yield(name, inst); err != nil {
			return err
		}
	}
	return nil
}

// revision is "sha256:" and the hash of every regular file and symlink
// under dir: relative slash path, NUL, content (or link target), NUL, in
// path order.
func revision(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		var content []byte
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			content = []byte("symlink:" + target)
		case d.Type().IsRegular():
			if content, err = os.ReadFile(p); err != nil {
				return err
			}
		default:
			return nil
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(content))
		h.Write(content)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// config is the part of Exercism's .meta/config.json the task reads.
type config struct {
	Files struct {
		Solution []string `json:"solution"`
		Test     []string `json:"test"`
		Example  []string `json:"example"`
	} `json:"files"`
}

// load reads one exercise; an error says why it is malformed.
func load(dir string) (instance, error) {
	var inst instance
	files, err := visibleFiles(dir)
	if err != nil {
		return inst, err
	}
	if _, ok := files["go.mod"]; !ok {
		return inst, errors.New("malformed exercise: no go.mod")
	}
	inst.Files = files
	inst.Instructions = instructions(dir)

	var cfg config
	var examples []string
	switch b, err := os.ReadFile(filepath.Join(dir, ".meta", "config.json")); {
	case errors.Is(err, fs.ErrNotExist):
		for p := range files {
			if path.Ext(p) == ".go" && !strings.Contains(p, "/") {
				if strings.HasSuffix(p, "_test.go") {
					inst.TestFiles = append(inst.TestFiles, p)
				} else {
					inst.SolutionFiles = append(inst.SolutionFiles, p)
				}
			}
		}
		slices.Sort(inst.SolutionFiles)
		slices.Sort(inst.TestFiles)
		if _, err := os.Stat(filepath.Join(dir, ".meta", "example.go")); err == nil {
			examples = []string{".meta/example.go"}
		}
	case err != nil:
		return inst, fmt.Errorf("malformed exercise: .meta/config.json: %w", err)
	default:
		if err := json.Unmarshal(b, &cfg); err != nil {
			return inst, fmt.Errorf("malformed exercise: .meta/config.json: %w", err)
		}
		inst.SolutionFiles, inst.TestFiles, examples = cfg.Files.Solution, cfg.Files.Test, cfg.Files.Example
		for _, p := range slices.Concat(inst.SolutionFiles, inst.TestFiles) {
			if !path.IsAbs(p) && path.Clean(p) == p && !strings.HasPrefix(p, "../") && p != ".." {
				continue
			}
			return inst, fmt.Errorf("malformed exercise: .meta/config.json names %q: give paths inside the exercise", p)
		}
		for _, p := range inst.TestFiles {
			if _, ok := files[p]; !ok {
				return inst, fmt.Errorf("malformed exercise: test file %s (named in .meta/config.json) is missing", p)
			}
		}
	}
	if len(inst.SolutionFiles) == 0 {
		return inst, errors.New("malformed exercise: no solution file")
	}
	if len(inst.TestFiles) == 0 {
		return inst, errors.New("malformed exercise: no test file")
	}
	ref, err := referenceFiles(dir, inst.SolutionFiles, examples)
	if err != nil {
		return inst, err
	}
	if ref != nil {
		inst.Reference = &reference{Files: ref}
	}
	return inst, nil
}

// visibleFiles reads every regular file of dir outside dot-directories.
func visibleFiles(dir string) (map[string]string, error) {
	files := map[string]string{}
	total := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if total += len(b); len(b) > maxFile || total > maxExercise {
			return fmt.Errorf("%s: the exercise is too large (files up to %d bytes, %d in all)", rel, maxFile, maxExercise)
		}
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("malformed exercise: %w", err)
	}
	return files, nil
}

// instructions joins .docs/introduction.md, instructions.md and
// instructions.append.md, those that exist.
func instructions(dir string) string {
	var parts []string
	for _, name := range []string{"introduction.md", "instructions.md", "instructions.append.md"} {
		if b, err := os.ReadFile(filepath.Join(dir, ".docs", name)); err == nil {
			parts = append(parts, strings.TrimSpace(string(b)))
		}
	}
	return strings.Join(parts, "\n\n")
}

// referenceFiles maps solution files to example files: one to one when
// there is one of each, else by base name; nil when there is no example.
func referenceFiles(dir string, solution, examples []string) (map[string]string, error) {
	if len(examples) == 0 {
		return nil, nil
	}
	ref := map[string]string{}
	for _, ex := range examples {
		target := ""
		if len(examples) == 1 && len(solution) == 1 {
			target = solution[0]
		} else {
			for _, s := range solution {
				if path.Base(s) == path.Base(ex) {
					target = s
				}
			}
		}
		if target == "" {
			return nil, fmt.Errorf("malformed exercise: example %s matches no solution file by name", ex)
		}
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ex)))
		if err != nil {
			return nil, fmt.Errorf("malformed exercise: example: %w", err)
		}
		ref[target] = string(b)
	}
	return ref, nil
}

type runOut struct {
	ExitCode int    `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	TimedOut bool   `json:"timed_out"`
}

func (t *task) Evaluate(ctx context.Context, a args, inst instance, _ output) (sdk.Result, error) {
	if inst.Error != "" {
		return sdk.Result{}, sdk.Errorf("task_error", "exercise %s: %s", inst.Exercise, inst.Error)
	}
	if t.goBin == "" {
		return sdk.Result{}, sdk.Errorf("task_error", "no go command found (looked in PATH, /usr/local/go/bin and the build's GOROOT): install Go on the host")
	}
	host, err := sdk.HostFrom(ctx)
	if err != nil {
		return sdk.Result{}, err
	}
	run := func(command string, timeoutS float64) (runOut, error) {
		var out runOut
		_, err := host.CallTool(ctx, "shell/run_command", map[string]any{"command": command, "timeout_s": timeoutS}, &out)
		return out, err
	}
	// Only the exercise's own tests run: drop every test file the agent
	// wrote, then restore every file but the solution.
	prep := "find . -path ./" + evalDir + " -prune -o -name '*_test.go' -type f -exec rm -f {} + && rm -rf go.work go.work.sum " + evalDir
	if out, err := run(prep, 60); err != nil {
		return sdk.Result{}, fmt.Errorf("prepare the work dir: %w", err)
	} else if out.ExitCode != 0 {
		return sdk.Result{}, fmt.Errorf("prepare the work dir: exit %d: %s", out.ExitCode, out.Stderr)
	}
	solution := map[string]bool{}
	for _, p := range inst.SolutionFiles {
		solution[p] = true
	}
	for _, p := range sortedKeys(inst.Files) {
		if solution[p] {
			continue
		}
		if _, err := host.CallTool(ctx, "shell/write_file", map[string]string{"path": p, "content": inst.Files[p]}, nil); err != nil {
			return sdk.Result{}, fmt.Errorf("restore %s: %w", p, err)
		}
	}
	out, err := run(testCommand(t.goBin, a.GoCache), testTimeoutS)
	if err != nil {
		return sdk.Result{}, fmt.Errorf("go test: %w", err)
	}
	return verdict(out), nil
}

// testCommand runs go test with fresh caches in the work dir, no network
// and no settings from the work dir (go.work, the user's go env).
func testCommand(goBin, seed string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "export HOME=\"$PWD/%[1]s/home\" GOCACHE=\"$PWD/%[1]s/go-build\" GOPATH=\"$PWD/%[1]s/gopath\" GOTMPDIR=\"$PWD/%[1]s/tmp\"", evalDir)
	b.WriteString(" GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local GOTELEMETRY=off GOWORK=off GOENV=off CGO_ENABLED=0;\n")
	b.WriteString("mkdir -p \"$HOME\" \"$GOCACHE\" \"$GOTMPDIR\" || exit 1;\n")
	if seed != "" {
		fmt.Fprintf(&b, "cp -R %s/. \"$GOCACHE\"/ 2>/dev/null;\n", shellQuote(seed))
	}
	fmt.Fprintf(&b, "exec %s test -count=1 -v ./... 2>&1", shellQuote(goBin))
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// verdict passes a run that exited 0 and ran at least one test.
func verdict(out runOut) sdk.Result {
	text := out.Stdout + out.Stderr
	d := details{ExitCode: out.ExitCode, TimedOut: out.TimedOut}
	ran := false
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "=== RUN"):
			ran = true
		case strings.HasPrefix(line, "--- PASS"):
			d.Passed++
		case strings.HasPrefix(line, "--- FAIL"):
			d.Failed++
		}
	}
	if len(text) > maxDetails {
		text = "…" + text[len(text)-maxDetails:]
	}
	d.Output = text
	if out.ExitCode == 0 && !out.TimedOut && ran {
		return sdk.Result{Score: 1, Passed: true, Details: d}
	}
	return sdk.Result{Score: 0, Details: d}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

const outputSchema = `{
  "type": "object",
  "description": "informational only: the agent's work is the files it wrote in the work dir (for example {\"files\": [paths written]})",
  "additionalProperties": true
}`

func main() {
	sdk.Serve(sdk.Plugin{Name: "exercises", Version: "0.1.0", Description: "Exercism-style Go exercises, checked by go test in the instance's sandbox",
		Grants: manifest.Grants{Tools: []string{"shell/*"}}},
		sdk.Task[args, instance, output]("exercises", "Go exercises (a stub to complete, tests, go.mod) from a directory; the agent writes the solution in the work dir and go test scores it there", &task{goBin: findGo()},
			sdk.OutputSchema(outputSchema), sdk.WithTags("code", "go")),
	)
}
