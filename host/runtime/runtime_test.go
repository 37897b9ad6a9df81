package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testSeq atomic.Int64

// provider returns the named default provider; the sandbox is skipped where
// bubblewrap cannot run.
func provider(t *testing.T, name string) Provider {
	t.Helper()
	p, err := DefaultProviders().Get(name)
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := p.(*Sandbox); ok {
		if err := s.Available(); err != nil {
			t.Skip(err)
		}
	}
	return p
}

var providerNames = []string{"local", "sandbox"}

// env is a test's own marker plus the package's, so leftovers of one test
// are found by that test.
type env struct{ mark string }

func newEnv() env {
	return env{mark: fmt.Sprintf("NEXUS_RUNTIME_CASE=%d-%d", os.Getpid(), testSeq.Add(1))}
}

func (e env) vars(extra ...string) []string {
	return append([]string{token, e.mark, "PATH=/usr/bin:/bin"}, extra...)
}

// searchableTempDir is t.TempDir made searchable for the sandbox user.
func searchableTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// newRuntime creates a runtime and, at cleanup, closes it and checks that
// its work dir and processes are gone.
func newRuntime(t *testing.T, p Provider, opts Options) (Runtime, env) {
	t.Helper()
	if opts.BaseDir == "" {
		opts.BaseDir = searchableTempDir(t)
	}
	rt, err := p.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("%s.New: %v", p.Name(), err)
	}
	e := newEnv()
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if _, err := os.Stat(rt.Dir()); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("work dir %s still there after Close (stat: %v)", rt.Dir(), err)
		}
		if pids := waitGone(e.mark, 5*time.Second); len(pids) > 0 {
			t.Errorf("processes left after Close: %v", pids)
		}
	})
	return rt, e
}

type result struct {
	stdout, stderr string
	err            error
}

func (r result) exitCode() int {
	var ee *exec.ExitError
	if errors.As(r.err, &ee) {
		if ws := ee.Sys().(syscall.WaitStatus); ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if r.err != nil {
		return -1
	}
	return 0
}

// run runs `sh -c script` in rt.
func run(ctx context.Context, rt Runtime, e env, script string, extraEnv ...string) result {
	cmd := rt.Command(ctx, "sh", "-c", script)
	cmd.Env = e.vars(extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return result{stdout.String(), stderr.String(), err}
}

func TestProviders(t *testing.T) {
	t.Parallel()
	ps := DefaultProviders()
	if diff := cmp.Diff([]string{"local", "sandbox"}, ps.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	tests := []struct {
		name    string
		do      func() error
		wantErr string
	}{
		{"get local", func() error { _, err := ps.Get("local"); return err }, ""},
		{"get sandbox", func() error { _, err := ps.Get("sandbox"); return err }, ""},
		{"get unknown", func() error { _, err := ps.Get("docker"); return err },
			`runtime provider "docker": unknown: choose one of local, sandbox`},
		{"register twice", func() error { return ps.Register(Local{}) },
			`runtime provider "local": registered twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.do()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("error = %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		check func(t *testing.T, rt Runtime, e env)
	}{
		{"sh -c writes into the work dir", func(t *testing.T, rt Runtime, e env) {
			if r := run(t.Context(), rt, e, "echo hi > f && mkdir -p sub && echo there > sub/g"); r.err != nil {
				t.Fatalf("run: %v: %s", r.err, r.stderr)
			}
			for name, want := range map[string]string{"f": "hi\n", "sub/g": "there\n"} {
				got, err := os.ReadFile(filepath.Join(rt.Dir(), name))
				if err != nil || string(got) != want {
					t.Errorf("%s = %q, %v; want %q", name, got, err, want)
				}
			}
		}},
		{"working dir is the work dir", func(t *testing.T, rt Runtime, e env) {
			r := run(t.Context(), rt, e, "pwd -P")
			if got := strings.TrimSpace(r.stdout); r.err != nil || got != rt.Dir() {
				t.Errorf("pwd = %q, %v; want %q", got, r.err, rt.Dir())
			}
		}},
		{"environment is only what the caller sets", func(t *testing.T, rt Runtime, e env) {
			cmd := rt.Command(t.Context(), "env")
			cmd.Env = e.vars("GREETING=hello world")
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			got := strings.Split(strings.TrimSpace(string(out)), "\n")
			want := e.vars("GREETING=hello world")
			if rt.Name() == "sandbox" {
				want = append(want, "PWD="+rt.Dir()) // set by bwrap --chdir
			}
			slices.Sort(got)
			slices.Sort(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		}},
		{"exit status", func(t *testing.T, rt Runtime, e env) {
			if r := run(t.Context(), rt, e, "echo oops >&2; exit 3"); r.exitCode() != 3 || r.stderr != "oops\n" {
				t.Errorf("exit %d, stderr %q; want 3, %q", r.exitCode(), r.stderr, "oops\n")
			}
		}},
	}
	for _, pname := range providerNames {
		for _, tt := range tests {
			t.Run(pname+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				rt, e := newRuntime(t, provider(t, pname), Options{})
				if rt.Name() != pname {
					t.Errorf("Name() = %q, want %q", rt.Name(), pname)
				}
				tt.check(t, rt, e)
			})
		}
	}
}

// waitFor polls until cond holds or fails the test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseKillsEverything(t *testing.T) {
	t.Parallel()
	for _, pname := range providerNames {
		t.Run(pname, func(t *testing.T) {
			t.Parallel()
			p := provider(t, pname)
			rt, err := p.New(t.Context(), Options{BaseDir: searchableTempDir(t)})
			if err != nil {
				t.Fatal(err)
			}
			e := newEnv()
			// A background child outlives its parent shell; both run
			// forever.
			cmd := rt.Command(context.Background(), "sh", "-c", "sleep 1000 & touch started; sleep 1000")
			cmd.Env = e.vars()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the command to start", func() bool {
				_, err := os.Stat(filepath.Join(rt.Dir(), "started"))
				return err == nil
			})
			if err := rt.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if err := cmd.Wait(); err == nil {
				t.Error("Wait: nil error, want killed")
			}
			if pids := waitGone(e.mark, 5*time.Second); len(pids) > 0 {
				t.Errorf("processes left after Close: %v", pids)
			}
			if _, err := os.Stat(rt.Dir()); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("work dir still there: %v", err)
			}
			if err := rt.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			late := rt.Command(t.Context(), "true")
			if err := late.Run(); !errors.Is(err, ErrClosed) {
				t.Errorf("Run after Close = %v, want ErrClosed", err)
			}
		})
	}
}

func TestCancelKillsGroup(t *testing.T) {
	t.Parallel()
	for _, pname := range providerNames {
		t.Run(pname, func(t *testing.T) {
			t.Parallel()
			rt, e := newRuntime(t, provider(t, pname), Options{})
			ctx, cancel := context.WithCancel(t.Context())
			cmd := rt.Command(ctx, "sh", "-c", "sleep 1000 & touch started; wait")
			cmd.Env = e.vars()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the command to start", func() bool {
				_, err := os.Stat(filepath.Join(rt.Dir(), "started"))
				return err == nil
			})
			cancel()
			if err := cmd.Wait(); err == nil {
				t.Error("Wait: nil error, want killed")
			}
			if pids := waitGone(e.mark, 5*time.Second); len(pids) > 0 {
				t.Errorf("processes left after cancel: %v", pids)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		limits Limits
		script string
		check  func(t *testing.T, rt Runtime, r result)
	}{
		{"cpu time", Limits{CPUSeconds: 1}, "while :; do :; done", func(t *testing.T, _ Runtime, r result) {
			// SIGXCPU at the soft limit or SIGKILL at the hard one.
			if c := r.exitCode(); c != 128+int(syscall.SIGXCPU) && c != 128+int(syscall.SIGKILL) {
				t.Errorf("exit %d (%v), want killed by SIGXCPU or SIGKILL", c, r.err)
			}
		}},
		{"file size", Limits{FileSizeBytes: 8192}, "head -c 100000 /dev/zero > big", func(t *testing.T, rt Runtime, r result) {
			if r.err == nil {
				t.Error("writing past the file size limit succeeded")
			}
			if fi, err := os.Stat(filepath.Join(rt.Dir(), "big")); err != nil || fi.Size() > 8192 {
				t.Errorf("big: %v, size %d; want at most 8192", err, fi.Size())
			}
		}},
		{"memory", Limits{MemoryBytes: 64 << 20}, `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo ${#x}`, func(t *testing.T, _ Runtime, r result) {
			if r.err == nil {
				t.Errorf("holding 200 MB under a 64 MiB limit succeeded: %q", r.stdout)
			}
		}},
		{"limits are set", Limits{CPUSeconds: 7, MemoryBytes: 1 << 30, Processes: 50, FileSizeBytes: 1 << 20},
			"grep -E 'cpu time|processes|file size|data size' /proc/self/limits",
			func(t *testing.T, _ Runtime, r result) {
				for _, want := range []string{
					`Max cpu time +7 +7 `, `Max file size +1048576 +1048576 `,
					`Max processes +50 +50 `, `Max data size +1073741824 +1073741824 `,
				} {
					if !regexpMatch(want, r.stdout) {
						t.Errorf("limits lack %q:\n%s", want, r.stdout)
					}
				}
			}},
	}
	for _, pname := range providerNames {
		for _, tt := range tests {
			t.Run(pname+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				rt, e := newRuntime(t, provider(t, pname), Options{Limits: tt.limits})
				tt.check(t, rt, run(t.Context(), rt, e, tt.script))
			})
		}
	}
}

func TestNegativeLimit(t *testing.T) {
	t.Parallel()
	for _, pname := range providerNames {
		t.Run(pname, func(t *testing.T) {
			t.Parallel()
			_, err := provider(t, pname).New(t.Context(), Options{Limits: Limits{Processes: -1}, BaseDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), "negative limit") {
				t.Errorf("New with a negative limit: %v", err)
			}
		})
	}
}

// TestForkBomb runs a fork bomb bounded to 2^9 processes (so a failure
// cannot take the machine down) under a limit of 30.
func TestForkBomb(t *testing.T) {
	t.Parallel()
	const limit = 30
	rt, e := newRuntime(t, provider(t, "sandbox"), Options{Limits: Limits{Processes: limit}})
	cmd := rt.Command(t.Context(), "sh", "-c", `b() { [ "$1" -lt 9 ] && { b $(($1+1)) & b $(($1+1)) & }; sleep 2; }; b 0; touch done; wait`)
	cmd.Env = e.vars()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	most := 0
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		most = max(most, len(procsWith(e.mark)))
		time.Sleep(50 * time.Millisecond)
	}
	_ = cmd.Wait()
	// The limit counts the processes inside the sandbox, bubblewrap's
	// init among them; the outer bubblewrap is outside.
	if most > limit+1 {
		t.Errorf("%d processes at once, want at most %d", most, limit+1)
	}
	// The bomb collapses fast once forks fail (a shell that cannot fork
	// exits), so the sampling above may miss its peak; the fork failures
	// prove the limit held it.
	if !strings.Contains(strings.ToLower(stderr.String()), "fork") {
		t.Errorf("stderr lacks a fork failure: %q", stderr.String())
	}
}

func regexpMatch(re, s string) bool {
	for line := range strings.SplitSeq(s, "\n") {
		if regexp.MustCompile(re).MatchString(line + " ") {
			return true
		}
	}
	return false
}

func TestSandboxIsolation(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash (for /dev/tcp) not found")
	}
	dial := fmt.Sprintf("bash -c 'exec 3<>/dev/tcp/127.0.0.1/%d' && echo connected", ln.Addr().(*net.TCPAddr).Port)

	hostDir := searchableTempDir(t)
	rwDir := searchableTempDir(t)
	roDir := searchableTempDir(t)
	if err := os.Chmod(rwDir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(roDir, "in"), []byte("ro\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name   string
		opts   Options
		script string
		check  func(t *testing.T, r result)
	}{
		{"host is read-only", Options{}, "touch /usr/nexus-sandbox-test", func(t *testing.T, r result) {
			if r.err == nil || !strings.Contains(r.stderr, "Read-only file system") {
				t.Errorf("touch /usr/…: %v, %q; want a read-only file system error", r.err, r.stderr)
			}
		}},
		{"host /tmp is not the sandbox's", Options{}, "echo x > " + filepath.Join(hostDir, "escaped") + "; ls " + hostDir, func(t *testing.T, r result) {
			if _, err := os.Stat(filepath.Join(hostDir, "escaped")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a write outside the work dir reached the host: %v", err)
			}
		}},
		{"no network", Options{}, dial, func(t *testing.T, r result) {
			if r.err == nil || strings.Contains(r.stdout, "connected") {
				t.Errorf("connected to the host's 127.0.0.1 without Network: %v, %q", r.err, r.stdout)
			}
		}},
		{"network when granted", Options{Network: true}, dial, func(t *testing.T, r result) {
			if r.err != nil || !strings.Contains(r.stdout, "connected") {
				t.Errorf("no connection with Network: %v, %q, %q", r.err, r.stdout, r.stderr)
			}
		}},
		{"binds are writable", Options{Binds: []string{rwDir}}, "echo w > " + filepath.Join(rwDir, "out"), func(t *testing.T, r result) {
			if b, err := os.ReadFile(filepath.Join(rwDir, "out")); r.err != nil || string(b) != "w\n" {
				t.Errorf("write into a bind: %v %q; file %q, %v", r.err, r.stderr, b, err)
			}
		}},
		{"read-only binds are readable, not writable", Options{ReadOnly: []string{roDir}},
			"cat " + filepath.Join(roDir, "in") + " && ! touch " + filepath.Join(roDir, "new"), func(t *testing.T, r result) {
				if r.err != nil || r.stdout != "ro\n" {
					t.Errorf("read-only bind: %v, %q, %q", r.err, r.stdout, r.stderr)
				}
			}},
		{"no host processes visible", Options{}, "ls /proc | grep -c '^[0-9]'", func(t *testing.T, r result) {
			if n := strings.TrimSpace(r.stdout); r.err != nil || len(n) > 1 {
				t.Errorf("sees %s processes (%v), want a handful", n, r.err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rt, e := newRuntime(t, provider(t, "sandbox"), tt.opts)
			tt.check(t, run(t.Context(), rt, e, tt.script))
		})
	}
}

func TestSandboxUnavailable(t *testing.T) {
	t.Parallel()
	s := &Sandbox{Bwrap: "/nonexistent/bwrap"}
	err := s.Available()
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "sandbox: bubblewrap not found") ||
		!strings.Contains(err.Error(), "apt-get install bubblewrap") {
		t.Errorf("Available() = %v", err)
	}
	if _, err2 := s.New(t.Context(), Options{BaseDir: t.TempDir()}); !errors.Is(err2, ErrUnavailable) {
		t.Errorf("New() = %v, want ErrUnavailable", err2)
	}
}

func TestSandboxUnreachableBaseDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("only a root host runs the sandbox as another user")
	}
	p := provider(t, "sandbox")
	_, err := p.New(t.Context(), Options{BaseDir: t.TempDir()}) // mode 0700
	if err == nil || !strings.Contains(err.Error(), "cannot enter") {
		t.Errorf("New in a 0700 dir: %v, want a cannot enter error", err)
	}
}
