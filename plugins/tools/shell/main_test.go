package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/sdk"
)

// markVar marks every process the tests start (children inherit it), so
// leftovers can be found in /proc.
const markVar = "NEXUS_SHELL_TEST"

// helperVar makes the test binary act as the plugin inside a runtime: it
// runs run_command on the JSON input in the variable, in its working dir.
const helperVar = "NEXUS_SHELL_HELPER_INPUT"

func TestMain(m *testing.M) {
	if in, ok := os.LookupEnv(helperVar); ok {
		os.Exit(helper(in))
	}
	mark := markVar + "=" + strconv.Itoa(os.Getpid())
	os.Setenv(markVar, strconv.Itoa(os.Getpid()))
	code := m.Run()
	if code == 0 {
		if pids := waitGone(mark, 5*time.Second); len(pids) > 0 {
			fmt.Fprintf(os.Stderr, "processes left behind: %v\n", pids)
			code = 1
		}
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// helper is main's path: the work dir is the working dir at start.
func helper(in string) int {
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w, err := openWorkDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var ri runIn
	if err := json.Unmarshal([]byte(in), &ri); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	out, err := w.runCommand(context.Background(), ri)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		return 1
	}
	return 0
}

func procsWith(env string) []int {
	var pids []int
	entries, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, e := range entries {
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(e)))
		if pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(e)
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(b, []byte{0}) {
			if string(kv) == env {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

func waitGone(env string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		pids := procsWith(env)
		if len(pids) == 0 || time.Now().After(deadline) {
			return pids
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// newWorkDir returns a work dir with a file, a subdir, and symlinks that
// lead outside it, next to a secret it must not reach.
func newWorkDir(t *testing.T) *workDir {
	t.Helper()
	top := t.TempDir()
	dir := filepath.Join(top, "work")
	for name, content := range map[string]string{
		"secret":         "outside\n",
		"work/hello.txt": "hello\n",
		"work/sub/a.txt": "a",
	} {
		p := filepath.Join(top, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"up":       "../secret",
		"etc":      "/etc",
		"sub/back": "../hello.txt",
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	w, err := openWorkDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.root.Close() })
	return w
}

func checkErr(t *testing.T, err error, wantCode, wantMsg string) {
	t.Helper()
	if wantCode == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	var se *sdk.Error
	if !errors.As(err, &se) {
		t.Fatalf("error = %v, want an *sdk.Error with code %s", err, wantCode)
	}
	if se.Code != wantCode || !strings.Contains(se.Message, wantMsg) {
		t.Errorf("error = %s: %s; want %s: …%s…", se.Code, se.Message, wantCode, wantMsg)
	}
}

func TestReadFile(t *testing.T) {
	t.Parallel()
	w := newWorkDir(t)
	big := strings.Repeat("x", maxOutput+1)
	if err := os.WriteFile(filepath.Join(w.dir, "big"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want, code, msg string
	}{
		{"file", "hello.txt", "hello\n", "", ""},
		{"nested", "sub/a.txt", "a", "", ""},
		{"symlink inside", "sub/back", "hello\n", "", ""},
		{"dot segments inside", "sub/../hello.txt", "hello\n", "", ""},
		{"empty", "", "", "invalid_input", "path is empty"},
		{"absolute", "/etc/passwd", "", "invalid_input", `"/etc/passwd" is absolute`},
		{"dot-dot", "../secret", "", "invalid_input", `"../secret" escapes the work dir`},
		{"dot-dot deep", "sub/../../secret", "", "invalid_input", "escapes the work dir"},
		{"symlink to parent", "up", "", "invalid_input", "escapes the work dir (through a symlink)"},
		{"symlink to /etc", "etc/passwd", "", "invalid_input", "escapes the work dir (through a symlink)"},
		{"missing", "nope.txt", "", "not_found", "nope.txt: no such file or directory"},
		{"directory", "sub", "", "invalid_input", "sub is a directory: use list_files"},
		{"work dir", ".", "", "invalid_input", "is the work dir itself"},
		{"too large", "big", "", "too_large", "big is 1048577 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := w.readFile(t.Context(), readIn{Path: tt.path})
			checkErr(t, err, tt.code, tt.msg)
			if got.Content != tt.want {
				t.Errorf("content = %q, want %q", got.Content, tt.want)
			}
		})
	}
}

func TestWriteFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, content, code, msg string
	}{
		{"new file", "new.txt", "data", "", ""},
		{"replace", "hello.txt", "bye", "", ""},
		{"creates parents", "x/y/z.txt", "deep", "", ""},
		{"empty content", "empty", "", "", ""},
		{"absolute", "/tmp/evil", "x", "invalid_input", "is absolute"},
		{"dot-dot", "../evil", "x", "invalid_input", "escapes the work dir"},
		{"through symlink to parent", "up", "x", "invalid_input", "escapes the work dir (through a symlink)"},
		{"through symlink to /etc", "etc/evil", "x", "invalid_input", "escapes the work dir (through a symlink)"},
		{"onto a directory", "sub", "x", "invalid_input", "sub is a directory"},
		{"under a file", "hello.txt/x", "x", "invalid_input", "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkDir(t)
			got, err := w.writeFile(t.Context(), writeIn{Path: tt.path, Content: tt.content})
			checkErr(t, err, tt.code, tt.msg)
			secret, _ := os.ReadFile(filepath.Join(w.dir, "..", "secret"))
			if string(secret) != "outside\n" {
				t.Errorf("the file outside the work dir changed: %q", secret)
			}
			if tt.code != "" {
				return
			}
			if got.Bytes != len(tt.content) {
				t.Errorf("bytes = %d, want %d", got.Bytes, len(tt.content))
			}
			b, err := os.ReadFile(filepath.Join(w.dir, tt.path))
			if err != nil || string(b) != tt.content {
				t.Errorf("file = %q, %v; want %q", b, err, tt.content)
			}
		})
	}
}

func TestListFiles(t *testing.T) {
	t.Parallel()
	w := newWorkDir(t)
	all := []fileInfo{
		{Path: "etc", Size: 4}, {Path: "hello.txt", Size: 6}, {Path: "sub", Size: 4096, Dir: true},
		{Path: "sub/a.txt", Size: 1}, {Path: "sub/back", Size: 12}, {Path: "up", Size: 9},
	}
	tests := []struct {
		name, path string
		want       []fileInfo
		code, msg  string
	}{
		{"work dir", "", all, "", ""},
		{"dot", ".", all, "", ""},
		{"subdir", "sub", all[3:5], "", ""},
		{"one file", "hello.txt", all[1:2], "", ""},
		{"absolute", "/", nil, "invalid_input", "is absolute"},
		{"dot-dot", "..", nil, "invalid_input", "escapes the work dir"},
		{"symlink to /etc", "etc", nil, "invalid_input", "escapes the work dir (through a symlink)"},
		{"missing", "nope", nil, "not_found", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := w.listFiles(t.Context(), listIn{Path: tt.path})
			checkErr(t, err, tt.code, tt.msg)
			// Directory sizes depend on the file system.
			for i := range got.Files {
				if got.Files[i].Dir {
					got.Files[i].Size = 4096
				}
			}
			if diff := cmp.Diff(tt.want, got.Files); tt.code == "" && diff != "" {
				t.Errorf("files (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		in        runIn
		want      runOut
		code, msg string
		check     func(t *testing.T, w *workDir, got runOut)
	}{
		{name: "stdout", in: runIn{Command: "echo hi"}, want: runOut{Stdout: "hi\n"}},
		{name: "stderr and exit code", in: runIn{Command: "echo oops >&2; exit 3"}, want: runOut{ExitCode: 3, Stderr: "oops\n"}},
		{name: "runs in the work dir", in: runIn{Command: "cat hello.txt; echo made > made.txt"}, want: runOut{Stdout: "hello\n"},
			check: func(t *testing.T, w *workDir, _ runOut) {
				if b, err := os.ReadFile(filepath.Join(w.dir, "made.txt")); err != nil || string(b) != "made\n" {
					t.Errorf("made.txt = %q, %v", b, err)
				}
			}},
		{name: "timeout kills the group", in: runIn{Command: "sleep 100 & sleep 100", TimeoutS: 0.3},
			want: runOut{ExitCode: 137, TimedOut: true}},
		{name: "background child does not outlive the command", in: runIn{Command: "sleep 100 & echo started"},
			want: runOut{Stdout: "started\n"}},
		{name: "output is capped", in: runIn{Command: "head -c 1100000 /dev/zero | tr '\\0' a; echo done >&2"},
			check: func(t *testing.T, _ *workDir, got runOut) {
				if len(got.Stdout) != maxOutput || !got.Truncated || got.Stderr != "done\n" {
					t.Errorf("stdout %d bytes, truncated %v, stderr %q; want %d, true, done", len(got.Stdout), got.Truncated, got.Stderr, maxOutput)
				}
			}},
		{name: "killed by a signal", in: runIn{Command: "kill -TERM $$"}, want: runOut{ExitCode: 143}},
		{name: "empty command", in: runIn{Command: " "}, code: "invalid_input", msg: "command is empty"},
		{name: "negative timeout", in: runIn{Command: "true", TimeoutS: -1}, code: "invalid_input", msg: "timeout_s -1 is out of range"},
		{name: "timeout too long", in: runIn{Command: "true", TimeoutS: 601}, code: "invalid_input", msg: "<= 600"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := newWorkDir(t)
			got, err := w.runCommand(t.Context(), tt.in)
			checkErr(t, err, tt.code, tt.msg)
			if tt.check != nil {
				tt.check(t, w, got)
			} else if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("run_command(%q) (-want +got):\n%s", tt.in.Command, diff)
			}
		})
	}
}

func TestRunCommandCancelled(t *testing.T) {
	t.Parallel()
	w := newWorkDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := w.runCommand(ctx, runIn{Command: "sleep 100"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want the call's context error", err)
	}
}

// TestInRuntime runs the tool the way the host will: the binary (here the
// test binary in helper mode) started by Runtime.Command, with the work dir
// as its working dir.
func TestInRuntime(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy every user can run, for a root host runs the sandbox as
	// nobody; /tmp is private in the sandbox, so it is bound read-only.
	binDir := searchable(t)
	bin := filepath.Join(binDir, "shell.test")
	copyFile(t, self, bin)
	for _, name := range []string{"local", "sandbox"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := runtime.DefaultProviders().Get(name)
			if err != nil {
				t.Fatal(err)
			}
			if s, ok := p.(*runtime.Sandbox); ok && s.Available() != nil {
				t.Skip(s.Available())
			}
			rt, err := p.New(t.Context(), runtime.Options{
				BaseDir:  searchable(t),
				ReadOnly: []string{binDir},
				Limits:   runtime.Limits{CPUSeconds: 30, Processes: 200},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				if err := rt.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			}()
			in, _ := json.Marshal(runIn{Command: "echo hi > f; pwd -P", TimeoutS: 10})
			cmd := rt.Command(t.Context(), bin)
			cmd.Env = []string{helperVar + "=" + string(in), markVar + "=" + strconv.Itoa(os.Getpid())}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			var got runOut
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %q", err, out)
			}
			if diff := cmp.Diff(runOut{Stdout: rt.Dir() + "\n"}, got); diff != "" {
				t.Errorf("run_command (-want +got):\n%s", diff)
			}
			if b, err := os.ReadFile(filepath.Join(rt.Dir(), "f")); err != nil || string(b) != "hi\n" {
				t.Errorf("f in the work dir = %q, %v; want hi", b, err)
			}
		})
	}
}

// searchable is t.TempDir made searchable for every user.
func searchable(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
