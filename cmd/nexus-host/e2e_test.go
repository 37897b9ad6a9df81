package main_test

// End-to-end tests of the nexus-host CLI: the real binary, real plugin
// binaries laid out in a temporary directory, assertions on stdout, stderr,
// exit code, the files left behind and the processes left running.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nexus-eval/nexus/internal/testkit"
	"github.com/nexus-eval/nexus/manifest"
)

const (
	pkgMath    = "plugins/tools/math"
	pkgArith   = "plugins/tasks/arith"
	pkgOracle  = "plugins/agents/oracle"
	pkgEcho    = "test/testplugins/echo"
	pkgGarbage = "test/testplugins/garbage"
)

// sandbox is one test's private directory: plugin roots, the working
// directory nexus-host runs in, and anything a fake plugin writes.
type sandbox struct {
	t   *testing.T
	dir string
	cwd string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	// Resolve symlinks so paths compare equal to what /proc and the host
	// report (a TMPDIR behind a symlink would otherwise not match).
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &sandbox{t: t, dir: dir, cwd: filepath.Join(dir, "cwd")}
	s.mkdir(s.cwd)
	return s
}

func (s *sandbox) path(rel ...string) string {
	return filepath.Join(append([]string{s.dir}, rel...)...)
}

func (s *sandbox) mkdir(dir string) {
	s.t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
}

func (s *sandbox) write(path, content string, perm os.FileMode) {
	s.t.Helper()
	s.mkdir(filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		s.t.Fatal(err)
	}
}

// root makes s.dir/name a plugin root holding a plugin dir for each
// package (its nexus.toml and freshly built binary) and returns it.
func (s *sandbox) root(name string, pkgs ...string) string {
	s.t.Helper()
	root := s.path(name)
	s.mkdir(root)
	for _, pkg := range pkgs {
		if _, err := builder.PluginDir(root, pkg); err != nil {
			s.t.Fatal(err)
		}
	}
	return root
}

// markerPlugin makes root/name a plugin dir with a valid manifest declaring
// one tool, whose binary is a shell script that only creates a marker file.
// The marker therefore exists iff something started the "plugin".
func (s *sandbox) markerPlugin(root, name, tool string) (marker string) {
	s.t.Helper()
	marker = s.path("started-" + name)
	dir := filepath.Join(root, name)
	s.write(filepath.Join(dir, name), "#!/bin/sh\ntouch '"+marker+"'\n", 0o755)
	s.write(filepath.Join(dir, manifest.FileName), fmt.Sprintf(`schema = 1

[plugin]
name = %[1]q
version = "0.1.0"
description = "a shell script that records that it was started"
binary = %[1]q
protocols = [1]

[[tool]]
name = %[2]q
description = "never served"
input_schema = '{"type": "object"}'
output_schema = '{"type": "object"}'
`, name, tool), 0o644)
	return marker
}

func (s *sandbox) assertNotStarted(marker string) {
	s.t.Helper()
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		s.t.Errorf("plugin was started (marker %s: %v), want no plugin process", marker, err)
	}
}

func (s *sandbox) assertStarted(marker string) {
	s.t.Helper()
	if _, err := os.Stat(marker); err != nil {
		s.t.Errorf("plugin was not started: %v", err)
	}
}

type result struct {
	stdout, stderr string
	code           int
}

type runOpts struct {
	stdin string
	env   []string // added to the environment
}

func (s *sandbox) run(args ...string) result {
	s.t.Helper()
	return s.runWith(runOpts{}, args...)
}

// runWith runs nexus-host in s.cwd and then checks that no process started
// from s.dir outlives it.
func (s *sandbox) runWith(o runOpts, args ...string) result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, hostBin, args...)
	cmd.Dir = s.cwd
	cmd.Env = append(baseEnv(), o.env...)
	cmd.Stdin = strings.NewReader(o.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		r.code = ee.ExitCode()
	default:
		s.t.Fatalf("nexus-host %s: %v\nstderr:\n%s", strings.Join(args, " "), err, r.stderr)
	}
	s.t.Logf("$ nexus-host %s  # exit %d\n--- stdout:\n%s--- stderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	s.assertNoLeftovers()
	return r
}

// baseEnv is the test's environment without anything that would make
// nexus-host discover plugins outside the sandbox.
func baseEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "NEXUS_")
	})
}

// assertNoLeftovers fails when a process whose executable or command line
// lies in the sandbox is still running shortly after nexus-host exited.
func (s *sandbox) assertNoLeftovers() {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		left := processesUnder(s.dir)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("processes left running after nexus-host exited:\n%s", strings.Join(left, "\n"))
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesUnder lists live processes whose executable or arguments name a
// path inside dir. Zombies have neither, so they do not count.
func processesUnder(dir string) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	prefix := dir + string(filepath.Separator)
	var out []string
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		exe, _ := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		if strings.HasPrefix(exe, prefix) || strings.Contains(args, prefix) {
			out = append(out, fmt.Sprintf("pid %d: exe %s: %s", pid, exe, args))
		}
	}
	return out
}

// Entry is one object of `list -o json`.
type Entry struct {
	Kind        string   `json:"kind"`
	Name        string   `json:"name"`
	Qualified   string   `json:"qualified"`
	Plugin      string   `json:"plugin"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	ToolKind    string   `json:"tool_kind"`
	TaskMode    string   `json:"task_mode"`
	Manifest    string   `json:"manifest"`
}

// inspected is one object of `inspect -o json`.
type inspected struct {
	Entry
	InputSchema  any `json:"input_schema"`
	OutputSchema any `json:"output_schema"`
}

// placed says that a package's plugin dir was laid out under root.
type placed struct{ root, pkg string }

// sourceManifest loads the nexus.toml of a package in the source tree.
func sourceManifest(t *testing.T, pkg string) *manifest.Manifest {
	t.Helper()
	m, diags := manifest.Load(filepath.Join(testkit.ModuleRoot, pkg, manifest.FileName))
	if diags.HasErrors() {
		t.Fatalf("source manifest of %s: %v", pkg, diags.Err())
	}
	return m
}

// wantEntries is what `list -o json` must print for the given plugins,
// restricted to kind when it is not empty: kinds in display order, then
// sorted by qualified name, as the source manifests declare them.
func wantEntries(t *testing.T, kind string, ps ...placed) []Entry {
	t.Helper()
	var out []Entry
	for _, p := range ps {
		m := sourceManifest(t, p.pkg)
		for _, k := range manifest.Kinds {
			if kind != "" && string(k) != kind {
				continue
			}
			for _, c := range m.Components(k) {
				e := Entry{
					Kind: string(k), Name: c.Name, Qualified: m.Plugin.Name + "/" + c.Name,
					Plugin: m.Plugin.Name, Version: m.Plugin.Version, Description: c.Description,
					Tags: c.Tags, TaskMode: c.Task,
					Manifest: filepath.Join(p.root, filepath.Base(p.pkg), manifest.FileName),
				}
				if k == manifest.KindTool {
					e.ToolKind = c.Kind
				}
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b Entry) int {
		return cmp.Or(
			cmp.Compare(slices.Index(manifest.Kinds, manifest.Kind(a.Kind)), slices.Index(manifest.Kinds, manifest.Kind(b.Kind))),
			cmp.Compare(a.Qualified, b.Qualified))
	})
	return out
}

// tableRows is what the `list` table must show for entries.
func tableRows(es []Entry) [][]string {
	rows := [][]string{{"KIND", "NAME", "PLUGIN", "VERSION", "DESCRIPTION"}}
	for _, e := range es {
		rows = append(rows, []string{e.Kind, e.Name, e.Plugin, e.Version, e.Description})
	}
	return rows
}

var columnGap = regexp.MustCompile(`\s{2,}`)

// parseTable splits `list` output into its columns.
func parseTable(out string) [][]string {
	var rows [][]string
	for line := range strings.Lines(out) {
		rows = append(rows, columnGap.Split(strings.TrimRight(line, "\n "), -1))
	}
	return rows
}

func decodeJSON[T any](t *testing.T, data string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("stdout is not the expected JSON: %v\n%s", err, data)
	}
	if dec.More() {
		t.Fatalf("stdout has more than one JSON value:\n%s", data)
	}
	return v
}

// assertExit checks the exit code, and that a failure says what went wrong
// in one "nexus-host: " message on stderr and prints nothing on stdout.
func assertExit(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, code, r.stdout, r.stderr)
	}
	if code != 0 && !strings.Contains(r.stderr, "nexus-host: ") {
		t.Errorf("stderr has no \"nexus-host: \" error message:\n%s", r.stderr)
	}
}

func assertContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, got)
		}
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// setup lays out plugins and returns the arguments, the extra
		// environment and the plugins that must be listed.
		setup func(s *sandbox) (args, env []string, want []placed)
		kind  string // --kind, if any
		// wantStderr: substrings of stderr; none means stderr is empty.
		wantStderr []string
	}{
		{
			name: "--plugins",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				r := s.root("roots", pkgMath, pkgArith, pkgOracle)
				return []string{"--plugins", r}, nil, []placed{{r, pkgMath}, {r, pkgArith}, {r, pkgOracle}}
			},
		},
		{
			name: "repeated --plugins",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				a := s.root("a", pkgMath)
				b := s.root("b", pkgArith, pkgOracle, pkgEcho)
				return []string{"--plugins", a, "--plugins", b}, nil, []placed{{a, pkgMath}, {b, pkgArith}, {b, pkgOracle}, {b, pkgEcho}}
			},
		},
		{
			name: "--plugins naming a plugin dir itself",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				r := s.root("roots", pkgMath)
				return []string{"--plugins", filepath.Join(r, "math")}, nil, []placed{{r, pkgMath}}
			},
		},
		{
			name: "NEXUS_PLUGIN_PATH",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				a := s.root("a", pkgMath)
				b := s.root("b", pkgArith, pkgOracle)
				return nil, []string{"NEXUS_PLUGIN_PATH=" + a + string(filepath.ListSeparator) + b}, []placed{{a, pkgMath}, {b, pkgArith}, {b, pkgOracle}}
			},
		},
		{
			name: "NEXUS_PLUGIN_PATH and --plugins together",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				a := s.root("a", pkgMath)
				b := s.root("b", pkgOracle)
				return []string{"--plugins", b}, []string{"NEXUS_PLUGIN_PATH=" + a}, []placed{{a, pkgMath}, {b, pkgOracle}}
			},
		},
		{
			name: "default roots under the working directory",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				tools := s.root(filepath.Join("cwd", "plugins", "tools"), pkgMath)
				tasks := s.root(filepath.Join("cwd", "plugins", "tasks"), pkgArith)
				return nil, nil, []placed{{tools, pkgMath}, {tasks, pkgArith}}
			},
		},
		{
			name: "--kind tool",
			kind: "tool",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				r := s.root("roots", pkgMath, pkgArith, pkgOracle, pkgEcho)
				return []string{"--plugins", r}, nil, []placed{{r, pkgMath}, {r, pkgArith}, {r, pkgOracle}, {r, pkgEcho}}
			},
		},
		{
			name: "--kind task",
			kind: "task",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				r := s.root("roots", pkgMath, pkgArith, pkgOracle, pkgEcho)
				return []string{"--plugins", r}, nil, []placed{{r, pkgMath}, {r, pkgArith}, {r, pkgOracle}, {r, pkgEcho}}
			},
		},
		{
			name: "no plugins",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				return []string{"--plugins", s.root("empty")}, nil, nil
			},
		},
		{
			name: "missing explicit root is reported, the others still listed",
			setup: func(s *sandbox) ([]string, []string, []placed) {
				r := s.root("roots", pkgMath)
				return []string{"--plugins", s.path("nonexistent"), "--plugins", r}, nil, []placed{{r, pkgMath}}
			},
			wantStderr: []string{"nonexistent", "cannot read plugin root"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			args, env, ps := tt.setup(s)
			kindArgs := []string{}
			if tt.kind != "" {
				kindArgs = []string{"--kind", tt.kind}
			}
			want := wantEntries(t, tt.kind, ps...)
			checkStderr := func(r result) {
				t.Helper()
				if len(tt.wantStderr) == 0 && r.stderr != "" {
					t.Errorf("stderr = %q, want it empty", r.stderr)
				}
				assertContains(t, "stderr", r.stderr, tt.wantStderr...)
			}

			// The table.
			r := s.runWith(runOpts{env: env}, slices.Concat(args, []string{"list"}, kindArgs)...)
			assertExit(t, r, 0)
			checkStderr(r)
			if diff := gocmp.Diff(tableRows(want), parseTable(r.stdout)); diff != "" {
				t.Errorf("list table (-want +got):\n%s", diff)
			}

			// The same as JSON.
			r = s.runWith(runOpts{env: env}, slices.Concat(args, []string{"list", "-o", "json"}, kindArgs)...)
			assertExit(t, r, 0)
			checkStderr(r)
			got := decodeJSON[[]Entry](t, r.stdout)
			if got == nil {
				t.Errorf("list -o json printed %q, want an array", strings.TrimSpace(r.stdout))
			}
			if diff := gocmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("list -o json (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUsageErrors: bad flag values and arguments are refused with a message
// that says what to use instead, before anything is discovered or started.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		wantStderr string // exactly
	}{
		{"list --kind", []string{"list", "--kind", "tools"}, "nexus-host: --kind \"tools\": use agent, tool or task\n"},
		{"list -o", []string{"list", "-o", "yaml"}, "nexus-host: -o \"yaml\": use table or json\n"},
		{"list --output", []string{"list", "--output", "text"}, "nexus-host: -o \"text\": use table or json\n"},
		{"inspect --kind", []string{"inspect", "--kind", "bogus", "calculator"}, "nexus-host: --kind \"bogus\": use agent, tool or task\n"},
		{"inspect -o", []string{"inspect", "-o", "table", "calculator"}, "nexus-host: -o \"table\": use text or json\n"},
		{"--log-level", []string{"--log-level", "bogus", "list"}, "nexus-host: --log-level \"bogus\": use trace, debug, info, warn or error\n"},
		{"--log-level on call", []string{"--log-level", "loud", "call", "probe", "{}"}, "nexus-host: --log-level \"loud\": use trace, debug, info, warn or error\n"},
		{"call without input", []string{"call", "probe"}, "nexus-host: accepts 2 arg(s), received 1\n"},
		{"list with an argument", []string{"list", "tools"}, "nexus-host: unknown command \"tools\" for \"nexus-host list\"\n"},
		{"unknown command", []string{"lst"}, "nexus-host: unknown command \"lst\" for \"nexus-host\"\n\nDid you mean this?\n\tlist\n\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			root := s.root("roots")
			marker := s.markerPlugin(root, "probe", "probe")
			r := s.run(append([]string{"--plugins", root}, tt.args...)...)
			assertExit(t, r, 1)
			if diff := gocmp.Diff(tt.wantStderr, r.stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want it empty", r.stdout)
			}
			s.assertNotStarted(marker)
		})
	}
}

// TestDiscoveryStartsNoPlugin: list, inspect and validate read manifests
// only. The plugin here is a shell script that leaves a marker file when it
// runs, so any start shows.
func TestDiscoveryStartsNoPlugin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		opts       runOpts
		wantCode   int
		wantStdout string // substring
		wantStderr string // substring; "" means stderr is empty
	}{
		{name: "list", args: []string{"list"}, wantStdout: "probe"},
		{name: "list -o json", args: []string{"list", "-o", "json"}, wantStdout: `"qualified": "probe/probe"`},
		{name: "list --kind tool", args: []string{"list", "--kind", "tool"}, wantStdout: "probe"},
		{name: "inspect", args: []string{"inspect", "probe"}, wantStdout: "tool probe/probe"},
		{name: "inspect qualified -o json", args: []string{"inspect", "-o", "json", "probe/probe"}, wantStdout: `"input_schema"`},
		{name: "validate", args: []string{"validate"}, wantStdout: "1 plugin(s) checked, no problems"},
		{
			name: "call with invalid JSON", args: []string{"call", "probe", `{"a": }`},
			wantCode: 1, wantStderr: "input is not valid JSON",
		},
		{
			name: "call with invalid JSON on stdin", args: []string{"call", "probe", "-"}, opts: runOpts{stdin: "[1, 2"},
			wantCode: 1, wantStderr: "stdin is not valid JSON",
		},
		{
			name: "call with a missing input file", args: []string{"call", "probe", "@missing.json"},
			wantCode: 1, wantStderr: "read missing.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			root := s.root("roots")
			marker := s.markerPlugin(root, "probe", "probe")
			r := s.runWith(tt.opts, append([]string{"--plugins", root}, tt.args...)...)
			assertExit(t, r, tt.wantCode)
			assertContains(t, "stdout", r.stdout, tt.wantStdout)
			if tt.wantStderr == "" && r.stderr != "" {
				t.Errorf("stderr = %q, want it empty", r.stderr)
			}
			assertContains(t, "stderr", r.stderr, tt.wantStderr)
			s.assertNotStarted(marker)
		})
	}
}

// TestCallStartsThePlugin is the counterpart of TestDiscoveryStartsNoPlugin:
// call does start the script, which then fails the handshake.
func TestCallStartsThePlugin(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("roots")
	marker := s.markerPlugin(root, "probe", "probe")
	r := s.run("--plugins", root, "call", "probe", "{}")
	assertExit(t, r, 1)
	s.assertStarted(marker)
	assertContains(t, "stderr", r.stderr,
		`plugin "probe"`, filepath.Join(root, "probe", "probe"), "handshake", "is this a Nexus plugin built with the sdk?")
	if r.stdout != "" {
		t.Errorf("stdout = %q, want it empty", r.stdout)
	}
}

func TestInspect(t *testing.T) {
	t.Parallel()
	math := sourceManifest(t, pkgMath)
	oracle := sourceManifest(t, pkgOracle)
	schema := func(text string) any {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantJSON   func(root string) []inspected // for -o json
		wantStdout []string                      // substrings, for text
		wantStderr []string                      // substrings; none means empty
	}{
		{
			name: "text",
			args: []string{"inspect", "calculator"},
			wantStdout: []string{
				"tool math/calculator\n",
				"  description: " + math.Tools[0].Description + "\n",
				"  plugin:      math " + math.Plugin.Version + "\n",
				"  tags:        [math]\n",
				"  runs:        local\n",
				"  task mode:   forbidden\n",
				"  input schema:\n    {\n",
				`"expression": {`,
				"  output schema:\n    {\n",
				`"value": {`,
			},
		},
		{
			name: "json",
			args: []string{"inspect", "-o", "json", "calculator"},
			wantJSON: func(root string) []inspected {
				return []inspected{{
					Entry:        wantEntries(t, "tool", placed{root, pkgMath})[0],
					InputSchema:  schema(math.Tools[0].InputSchema),
					OutputSchema: schema(math.Tools[0].OutputSchema),
				}}
			},
		},
		{
			name: "json qualified agent with a boolean schema",
			args: []string{"inspect", "-o", "json", "--kind", "agent", "oracle/oracle"},
			wantJSON: func(root string) []inspected {
				return []inspected{{
					Entry:        wantEntries(t, "agent", placed{root, pkgOracle})[0],
					InputSchema:  schema(oracle.Agents[0].InputSchema),
					OutputSchema: true,
				}}
			},
		},
		{
			name:       "unknown name suggests the close one",
			args:       []string{"inspect", "calculater"},
			wantCode:   1,
			wantStderr: []string{`tool "calculater": not found: did you mean "calculator"?`},
		},
		{
			name:       "unknown name of one kind",
			args:       []string{"inspect", "--kind", "tool", "stat"},
			wantCode:   1,
			wantStderr: []string{`tool "stat": not found: did you mean "stats"?`},
		},
		{
			name:       "unknown name, nothing close",
			args:       []string{"inspect", "--kind", "task", "zzzzzz"},
			wantCode:   1,
			wantStderr: []string{`task "zzzzzz": not found`, "nexus-host list --kind task"},
		},
		{
			name:       "known name of another kind",
			args:       []string{"inspect", "--kind", "agent", "calculator"},
			wantCode:   1,
			wantStderr: []string{`agent "calculator": not found`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			root := s.root("roots", pkgMath, pkgOracle, pkgArith)
			r := s.run(append([]string{"--plugins", root}, tt.args...)...)
			assertExit(t, r, tt.wantCode)
			if len(tt.wantStderr) == 0 && r.stderr != "" {
				t.Errorf("stderr = %q, want it empty", r.stderr)
			}
			assertContains(t, "stderr", r.stderr, tt.wantStderr...)
			assertContains(t, "stdout", r.stdout, tt.wantStdout...)
			if tt.wantJSON != nil {
				got := decodeJSON[[]inspected](t, r.stdout)
				if diff := gocmp.Diff(tt.wantJSON(root), got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("inspect -o json (-want +got):\n%s", diff)
				}
			}
			if tt.wantCode != 0 && r.stdout != "" {
				t.Errorf("stdout = %q, want it empty", r.stdout)
			}
		})
	}
}

func TestCall(t *testing.T) {
	t.Parallel()
	const calc = `{"expression":"2*(3+4)"}`
	tests := []struct {
		name  string
		pkgs  []string // laid out in the --plugins root
		setup func(s *sandbox, root string)
		args  []string // after "call"
		opts  runOpts
		// On success stdout must equal wantStdout; on failure stderr must
		// contain each of wantStderr.
		wantCode   int
		wantStdout string
		wantStderr []string
	}{
		{
			name: "literal input", pkgs: []string{pkgMath},
			args:       []string{"calculator", calc},
			wantStdout: "{\n  \"value\": 14\n}\n",
		},
		{
			name: "qualified name", pkgs: []string{pkgMath, pkgEcho},
			args:       []string{"math/calculator", calc},
			wantStdout: "{\n  \"value\": 14\n}\n",
		},
		{
			name: "@file relative to the working directory", pkgs: []string{pkgMath},
			setup: func(s *sandbox, _ string) {
				s.write(filepath.Join(s.cwd, "in.json"), "{\n  \"expression\": \"2*(3+4)\"\n}\n", 0o644)
			},
			args:       []string{"calculator", "@in.json"},
			wantStdout: "{\n  \"value\": 14\n}\n",
		},
		{
			name: "stdin", pkgs: []string{pkgMath},
			args:       []string{"calculator", "-"},
			opts:       runOpts{stdin: calc + "\n"},
			wantStdout: "{\n  \"value\": 14\n}\n",
		},
		{
			name: "nested output is pretty-printed", pkgs: []string{pkgMath},
			args:       []string{"stats", `{"values": [1, 2, 3, 6]}`},
			wantStdout: "{\n  \"count\": 4,\n  \"sum\": 12,\n  \"mean\": 3,\n  \"min\": 1,\n  \"max\": 6\n}\n",
		},
		{
			name: "invalid JSON argument", pkgs: []string{pkgMath},
			args:     []string{"calculator", "{\n  \"expression\": \"1\",\n  oops\n}"},
			wantCode: 1, wantStderr: []string{"input is not valid JSON", "line 3, column 3"},
		},
		{
			name: "input ends too soon", pkgs: []string{pkgMath},
			args:     []string{"calculator", `{"expression":`},
			wantCode: 1, wantStderr: []string{"input is not valid JSON: unexpected end of JSON input at line 1, column 15"},
		},
		{
			name: "newline inside a string", pkgs: []string{pkgMath},
			args:     []string{"calculator", "{\"expression\": \"1\n+1\"}"},
			wantCode: 1, wantStderr: []string{`input is not valid JSON: invalid character '\n' in string literal at line 1, column 18`},
		},
		{
			name: "invalid JSON on stdin", pkgs: []string{pkgMath},
			args: []string{"calculator", "-"}, opts: runOpts{stdin: `{"expression": "1"} x`},
			wantCode: 1, wantStderr: []string{"stdin is not valid JSON", "line 1, column 21"},
		},
		{
			name: "invalid JSON in a file", pkgs: []string{pkgMath},
			setup: func(s *sandbox, _ string) {
				s.write(filepath.Join(s.cwd, "bad.json"), "{\"expression\":\n\"1\"\n", 0o644)
			},
			args:     []string{"calculator", "@bad.json"},
			wantCode: 1, wantStderr: []string{"bad.json is not valid JSON", "unexpected end of JSON input at line 3, column 1"},
		},
		{
			name: "empty stdin", pkgs: []string{pkgMath},
			args:     []string{"calculator", "-"},
			wantCode: 1, wantStderr: []string{"stdin is not valid JSON"},
		},
		{
			name: "tool domain error", pkgs: []string{pkgMath},
			args:     []string{"calculator", `{"expression": "1/0"}`},
			wantCode: 1, wantStderr: []string{`tool "calculator" (plugin "math")`, "division by zero"},
		},
		{
			name: "tool error from a test plugin", pkgs: []string{pkgEcho},
			args:     []string{"fail", `{"text": "on purpose"}`},
			wantCode: 1, wantStderr: []string{`tool "fail" (plugin "echo")`, "fail was asked to fail: on purpose"},
		},
		{
			name: "unknown tool", pkgs: []string{pkgMath},
			args:     []string{"calculatr", calc},
			wantCode: 1, wantStderr: []string{`tool "calculatr": not found: did you mean "calculator"?`},
		},
		{
			name: "an agent is not a tool", pkgs: []string{pkgMath, pkgOracle},
			args:     []string{"oracle", "{}"},
			wantCode: 1, wantStderr: []string{`tool "oracle": not found`},
		},
		{
			name: "missing binary", pkgs: []string{pkgMath},
			setup: func(s *sandbox, root string) {
				if err := os.Remove(filepath.Join(root, "math", "math")); err != nil {
					s.t.Fatal(err)
				}
			},
			args:     []string{"calculator", calc},
			wantCode: 1, wantStderr: []string{"does not exist", "make plugins"},
		},
		{
			name: "binary is not a plugin", pkgs: []string{pkgGarbage},
			args:     []string{"garbage", "{}"},
			wantCode: 1, wantStderr: []string{`plugin "garbage"`, "handshake", "is this a Nexus plugin built with the sdk?", "garbage: refusing to be a plugin"},
		},
		{
			name: "plugin crashes during the call", pkgs: []string{pkgEcho},
			args:     []string{"panic", `{"text": "x"}`},
			wantCode: 1, wantStderr: []string{"panic"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			root := s.root("roots", tt.pkgs...)
			if tt.setup != nil {
				tt.setup(s, root)
			}
			r := s.runWith(tt.opts, slices.Concat([]string{"--plugins", root, "call"}, tt.args)...)
			assertExit(t, r, tt.wantCode)
			if diff := gocmp.Diff(tt.wantStdout, r.stdout); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if tt.wantCode == 0 && r.stderr != "" {
				t.Errorf("stderr = %q, want it empty", r.stderr)
			}
			assertContains(t, "stderr", r.stderr, tt.wantStderr...)
		})
	}
}

// copyTestdata copies testdata/<name> to dst.
func copyTestdata(t *testing.T, name, dst string) {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("testdata", name))); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()

	t.Run("good tree", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		root := s.root("roots", pkgMath, pkgArith, pkgOracle, pkgEcho)
		r := s.run("--plugins", root, "validate")
		assertExit(t, r, 0)
		if diff := gocmp.Diff("4 plugin(s) checked, no problems\n", r.stdout); diff != "" {
			t.Errorf("stdout (-want +got):\n%s", diff)
		}
		if r.stderr != "" {
			t.Errorf("stderr = %q, want it empty", r.stderr)
		}
	})

	t.Run("broken manifests", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		root := s.root("roots", pkgMath)
		copyTestdata(t, "broken", root)
		// One want per broken manifest, at the position of the mistake.
		type diag struct {
			plugin  string
			pos     string
			message string // substring
		}
		discovery := []diag{ // found by every command that discovers
			{"badjson", "12:35", `input_schema of tool "t" is not valid JSON`},
			{"badname", "10:8", `tool name "Bad Name!" is invalid`},
			{"malformed", "11:38", "invalid TOML"},
			{"unknownkey", "14:1", `unknown key "tool.colour"`},
		}
		deep := diag{"badschema", "13:17", `output_schema of tool "t" is not a valid JSON Schema`} // validate only
		check := func(t *testing.T, out string, want []diag) {
			t.Helper()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(want) {
				t.Fatalf("got %d diagnostic lines, want %d:\n%s", len(lines), len(want), out)
			}
			for i, w := range want {
				prefix := fmt.Sprintf("%s:%s: ", filepath.Join(root, w.plugin, manifest.FileName), w.pos)
				if !strings.HasPrefix(lines[i], prefix) || !strings.Contains(lines[i], w.message) {
					t.Errorf("diagnostic %d = %q\nwant %q followed by a message containing %q", i, lines[i], prefix, w.message)
				}
			}
		}

		r := s.run("--plugins", root, "validate")
		assertExit(t, r, 1)
		all := slices.Insert(slices.Clone(discovery), 2, deep) // sorted by path
		check(t, r.stdout, all)
		if diff := gocmp.Diff(fmt.Sprintf("nexus-host: %d problem(s) found\n", len(all)), r.stderr); diff != "" {
			t.Errorf("stderr (-want +got):\n%s", diff)
		}

		// Discovery goes on past the broken manifests: list shows the good
		// plugin and reports the broken ones on stderr.
		r = s.run("--plugins", root, "list", "-o", "json")
		assertExit(t, r, 0)
		check(t, r.stderr, discovery)
		plugins := map[string]bool{}
		for _, e := range decodeJSON[[]Entry](t, r.stdout) {
			plugins[e.Plugin] = true
		}
		if !plugins["math"] {
			t.Errorf("list -o json does not show the good plugin math:\n%s", r.stdout)
		}
		for _, d := range discovery {
			if plugins[d.plugin] {
				t.Errorf("list -o json shows the broken plugin %s:\n%s", d.plugin, r.stdout)
			}
		}

		// And the good plugin still works.
		r = s.run("--plugins", root, "call", "math/calculator", `{"expression": "6*7"}`)
		assertExit(t, r, 0)
		if diff := gocmp.Diff("{\n  \"value\": 42\n}\n", r.stdout); diff != "" {
			t.Errorf("call stdout (-want +got):\n%s", diff)
		}
	})
}

// TestDuplicateToolName: two plugins declare a tool "echo". Both are listed,
// the conflict is reported naming both manifests, the short name is
// ambiguous and the qualified names work.
func TestDuplicateToolName(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	root := s.root("roots", pkgEcho)
	marker := s.markerPlugin(root, "shadow", "echo")
	echoManifest := filepath.Join(root, "echo", manifest.FileName)
	shadowManifest := filepath.Join(root, "shadow", manifest.FileName)

	r := s.run("--plugins", root, "list", "--kind", "tool", "-o", "json")
	assertExit(t, r, 0)
	var echoes []string
	for _, e := range decodeJSON[[]Entry](t, r.stdout) {
		if e.Name == "echo" {
			echoes = append(echoes, e.Qualified)
		}
	}
	if diff := gocmp.Diff([]string{"echo/echo", "shadow/echo"}, echoes); diff != "" {
		t.Errorf("tools named echo (-want +got):\n%s", diff)
	}
	assertContains(t, "list stderr", r.stderr, `tool "echo"`, echoManifest, shadowManifest, "qualified name")

	r = s.run("--plugins", root, "call", "echo", `{"text": "hi"}`)
	assertExit(t, r, 1)
	assertContains(t, "call stderr", r.stderr, "ambiguous", "echo/echo", "shadow/echo")
	if r.stdout != "" {
		t.Errorf("ambiguous call printed %q, want nothing", r.stdout)
	}

	r = s.run("--plugins", root, "inspect", "--kind", "tool", "echo")
	assertExit(t, r, 1)
	assertContains(t, "inspect stderr", r.stderr, "ambiguous", "echo/echo", "shadow/echo")

	r = s.run("--plugins", root, "inspect", "shadow/echo")
	assertExit(t, r, 0)
	assertContains(t, "inspect stdout", r.stdout, "tool shadow/echo\n", "manifest:    "+shadowManifest+"\n")

	r = s.run("--plugins", root, "validate")
	assertExit(t, r, 1)
	assertContains(t, "validate stdout", r.stdout, shadowManifest+":1:1: warning: ", echoManifest)

	r = s.run("--plugins", root, "call", "echo/echo", `{"text": "hi"}`)
	assertExit(t, r, 0)
	if diff := gocmp.Diff("{\n  \"text\": \"hi\"\n}\n", r.stdout); diff != "" {
		t.Errorf("call echo/echo stdout (-want +got):\n%s", diff)
	}
	// Neither the ambiguous call nor the call of the other plugin's tool
	// may have started the shadow plugin.
	s.assertNotStarted(marker)
}

func TestPluginsManifest(t *testing.T) {
	t.Parallel()

	// pluginBinaryDir makes s.dir/name/name the built binary of pkg, alone.
	pluginBinaryDir := func(s *sandbox, name, pkg string) string {
		bin, err := builder.Binary(pkg)
		if err != nil {
			s.t.Fatal(err)
		}
		dir := s.path("gen", name)
		s.mkdir(dir)
		if err := testkit.LinkOrCopy(bin, filepath.Join(dir, name)); err != nil {
			s.t.Fatal(err)
		}
		return dir
	}
	dirNames := func(t *testing.T, dir string) []string {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		return names
	}

	t.Run("writes a manifest that validates", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		dir := pluginBinaryDir(s, "math", pkgMath)
		path := filepath.Join(dir, manifest.FileName)

		r := s.run("plugins", "manifest", dir)
		assertExit(t, r, 0)
		if diff := gocmp.Diff("wrote "+path+"\n", r.stderr); diff != "" {
			t.Errorf("stderr (-want +got):\n%s", diff)
		}
		if r.stdout != "" {
			t.Errorf("stdout = %q, want it empty", r.stdout)
		}
		if diff := gocmp.Diff([]string{"math", manifest.FileName}, dirNames(t, dir)); diff != "" {
			t.Errorf("files in %s (-want +got):\n%s", dir, diff)
		}
		written, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}

		r = s.run("--plugins", filepath.Dir(dir), "validate")
		assertExit(t, r, 0)
		assertContains(t, "validate stdout", r.stdout, "1 plugin(s) checked, no problems")

		r = s.run("--plugins", filepath.Dir(dir), "list", "-o", "json")
		assertExit(t, r, 0)
		if diff := gocmp.Diff(wantEntries(t, "", placed{filepath.Dir(dir), pkgMath}), decodeJSON[[]Entry](t, r.stdout), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("list of the generated manifest (-want +got):\n%s", diff)
		}

		r = s.run("--plugins", filepath.Dir(dir), "call", "calculator", `{"expression": "7%4"}`)
		assertExit(t, r, 0)
		if diff := gocmp.Diff("{\n  \"value\": 3\n}\n", r.stdout); diff != "" {
			t.Errorf("call stdout (-want +got):\n%s", diff)
		}

		// --stdout prints the same manifest and writes nothing.
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		r = s.run("plugins", "manifest", "--stdout", dir)
		assertExit(t, r, 0)
		if diff := gocmp.Diff(string(written), r.stdout); diff != "" {
			t.Errorf("--stdout (-want +got):\n%s", diff)
		}
		if diff := gocmp.Diff([]string{"math"}, dirNames(t, dir)); diff != "" {
			t.Errorf("files in %s after --stdout (-want +got):\n%s", dir, diff)
		}
	})

	t.Run("--binary", func(t *testing.T) {
		t.Parallel()
		s := newSandbox(t)
		src := pluginBinaryDir(s, "echo", pkgEcho)
		dir := s.path("elsewhere")
		s.mkdir(dir)
		r := s.run("plugins", "manifest", "--stdout", "--binary", filepath.Join(src, "echo"), dir)
		assertExit(t, r, 0)
		m, diags := manifest.Parse("stdout", []byte(r.stdout))
		if diags.HasErrors() {
			t.Fatalf("--stdout printed an invalid manifest: %v\n%s", diags.Err(), r.stdout)
		}
		if m.Plugin.Name != "echo" || len(m.Tools) == 0 {
			t.Errorf("manifest of plugin %q with %d tools, want echo's", m.Plugin.Name, len(m.Tools))
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Errorf("--stdout wrote %v", names)
		}
	})

	failures := []struct {
		name       string
		setup      func(s *sandbox) (dir string)
		wantStderr []string
	}{
		{
			name:       "not a plugin binary",
			setup:      func(s *sandbox) string { return pluginBinaryDir(s, "garbage", pkgGarbage) },
			wantStderr: []string{"--nexus-manifest", "exit status 3", "garbage: refusing to be a plugin", "is it a Nexus plugin built with the sdk?"},
		},
		{
			name: "a script that prints no manifest",
			setup: func(s *sandbox) string {
				dir := s.path("gen", "quiet")
				s.write(filepath.Join(dir, "quiet"), "#!/bin/sh\necho 'schema = \"one\"'\n", 0o755)
				return dir
			},
			wantStderr: []string{"printed an invalid manifest"},
		},
		{
			name: "no binary",
			setup: func(s *sandbox) string {
				dir := s.path("gen", "empty")
				s.mkdir(dir)
				return dir
			},
			wantStderr: []string{"no plugin binary found at", "--binary"},
		},
	}
	for _, tt := range failures {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			dir := tt.setup(s)
			before := dirNames(t, dir)
			r := s.run("plugins", "manifest", dir)
			assertExit(t, r, 1)
			assertContains(t, "stderr", r.stderr, tt.wantStderr...)
			if diff := gocmp.Diff(before, dirNames(t, dir)); diff != "" {
				t.Errorf("files in %s changed (-before +after):\n%s", dir, diff)
			}
		})
	}
}
