package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/manifest"
)

// pluginRoot lays out the given plugin packages in a fresh root.
func pluginRoot(t *testing.T, pkgs ...string) string { return builder.Root(t, pkgs...) }

// newHost discovers root and closes the host when the test ends.
func newHost(t *testing.T, root string, opts ...func(*host.Options)) *host.Host {
	t.Helper()
	o := host.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Warn})}
	for _, f := range opts {
		f(&o)
	}
	h := host.New(o)
	for _, d := range h.Discover([]manifest.Root{{Dir: root, Explicit: true}}) {
		t.Logf("diagnostic: %s", d)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func call(t *testing.T, h *host.Host, name, input string) (json.RawMessage, error) {
	t.Helper()
	tool, err := h.Tools.Get(context.Background(), name)
	if err != nil {
		return nil, err
	}
	return tool.Call(context.Background(), json.RawMessage(input))
}

func pidOf(t *testing.T, h *host.Host) int {
	t.Helper()
	out, err := call(t, h, "pid", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Pid int }
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	return p.Pid
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

// waitGone waits until pid no longer exists (or is a zombie nobody reaps).
func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if !alive(pid) || zombie(pid) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("process %d still running after %v", pid, within)
}

func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return strings.HasPrefix(rest, "Z")
}

func TestListStartsNothing(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "plugins/tools/math", "plugins/tasks/arith", "plugins/agents/oracle"))
	var names []string
	for _, m := range h.Tools.List() {
		names = append(names, m.Qualified())
	}
	if got, want := strings.Join(names, ","), "math/calculator,math/stats"; got != want {
		t.Errorf("tools = %s, want %s", got, want)
	}
	if len(h.Agents.List()) != 1 || len(h.Tasks.List()) != 1 {
		t.Errorf("agents %v tasks %v, want one each", h.Agents.List(), h.Tasks.List())
	}
	if n := h.Running(); n != 0 {
		t.Errorf("%d plugin processes running after discovery, want 0", n)
	}
}

func TestCallLaunchesOnceAndSharesProcess(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "plugins/tools/math"))
	out, err := call(t, h, "calculator", `{"expression": "2 * (3 + 4) - -1"}`)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `{"value":15}` {
		t.Errorf("calculator = %s, want {\"value\":15}", out)
	}
	out, err = call(t, h, "math/stats", `{"values": [1, 2, 3]}`)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Count, Sum, Mean float64 }
	if err := json.Unmarshal(out, &st); err != nil || st.Count != 3 || st.Sum != 6 || st.Mean != 2 {
		t.Errorf("stats = %s (%v)", out, err)
	}
	if n := h.Running(); n != 1 {
		t.Errorf("%d processes for two tools of one binary, want 1", n)
	}
}

func TestConcurrentFirstLookupsShareOneLaunch(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	const n = 16
	pids := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { pids[i] = pidOf(t, h) })
	}
	wg.Wait()
	for i, p := range pids {
		if p != pids[0] {
			t.Fatalf("call %d ran in pid %d, call 0 in %d: want one shared process", i, p, pids[0])
		}
	}
	if n := h.Running(); n != 1 {
		t.Errorf("%d processes running, want 1", n)
	}
}

func TestTaskAgentEndToEnd(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "plugins/tools/math", "plugins/tasks/arith", "plugins/agents/oracle"))
	ctx := context.Background()
	task, err := h.Tasks.Get(ctx, "arith")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := h.Agents.Get(ctx, "oracle")
	if err != nil {
		t.Fatal(err)
	}
	calc, err := h.Tools.Get(ctx, "calculator")
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"n": 25, "seed": 7}`)
	count := 0
	for inst, err := range task.Instances(ctx, args) {
		if err != nil {
			t.Fatal(err)
		}
		count++
		out, err := agent.Run(ctx, inst.Data)
		if err != nil {
			t.Fatalf("%s: oracle: %v", inst.ID, err)
		}
		res, err := task.Evaluate(ctx, args, inst, out)
		if err != nil {
			t.Fatalf("%s: evaluate: %v", inst.ID, err)
		}
		if !res.Passed || res.Score != 1 {
			t.Errorf("%s: oracle scored %v (passed %v): %s", inst.ID, res.Score, res.Passed, res.Details)
		}
		// The calculator must agree with the task's reference answer.
		var in struct {
			Expression string
			Reference  struct{ Answer float64 }
		}
		if err := json.Unmarshal(inst.Data, &in); err != nil {
			t.Fatal(err)
		}
		got, err := calc.Call(ctx, json.RawMessage(fmt.Sprintf(`{"expression": %q}`, in.Expression)))
		if err != nil {
			t.Fatalf("%s: calculator(%q): %v", inst.ID, in.Expression, err)
		}
		if want := fmt.Sprintf(`{"value":%v}`, in.Reference.Answer); string(got) != want {
			t.Errorf("%s: calculator(%q) = %s, task reference %s", inst.ID, in.Expression, got, want)
		}
		// A wrong answer must fail.
		res, err = task.Evaluate(ctx, args, inst, json.RawMessage(fmt.Sprintf(`{"answer": %v}`, in.Reference.Answer+1)))
		if err != nil || res.Passed {
			t.Errorf("%s: wrong answer passed=%v err=%v", inst.ID, res.Passed, err)
		}
	}
	if count != 25 {
		t.Errorf("task yielded %d instances, want 25", count)
	}
	if n := h.Running(); n != 3 {
		t.Errorf("%d processes, want 3", n)
	}
}

func TestTaskRejectsArgs(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	task, err := h.Tasks.Get(context.Background(), "count")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range task.Instances(context.Background(), json.RawMessage(`{"n": -1}`)) {
		var ce *component.Error
		if !errors.As(err, &ce) || ce.Code != "invalid_argument" || !strings.Contains(ce.Message, "n must be positive") {
			t.Fatalf("err = %v, want an invalid_argument component error", err)
		}
		return
	}
	t.Fatal("no error for n = -1")
}

func TestDomainErrorsAndPanicsKeepThePluginServing(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	pid := pidOf(t, h)

	_, err := call(t, h, "fail", `{"text": "please"}`)
	var ce *component.Error
	if !errors.As(err, &ce) || ce.Code != "invalid_input" || ce.Plugin != "echo" || ce.Component != "fail" {
		t.Fatalf("fail: err = %#v, want a component error from echo/fail", err)
	}
	if !strings.Contains(err.Error(), "fail was asked to fail: please") {
		t.Errorf("error %q lost the plugin's message", err)
	}

	_, err = call(t, h, "panic", `{"text": ""}`)
	if !errors.As(err, &ce) || ce.Code != "panic" || !strings.Contains(ce.Message, "boom") {
		t.Fatalf("panic: err = %v, want code panic mentioning boom", err)
	}
	if got := pidOf(t, h); got != pid {
		t.Errorf("plugin restarted after a handler panic (pid %d -> %d)", pid, got)
	}
}

func TestCancellationReachesThePlugin(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	tool, err := h.Tools.Get(context.Background(), "block")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = tool.Call(ctx, json.RawMessage(`{}`))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want context.DeadlineExceeded", err)
	}
	// The plugin is still healthy.
	if _, err := call(t, h, "echo", `{"text": "x"}`); err != nil {
		t.Fatal(err)
	}
}

func TestCloseStopsEveryProcess(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	pid := pidOf(t, h)
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 2*time.Second)
	if _, err := call(t, h, "echo", `{"text": "x"}`); !errors.Is(err, launch.ErrClosed) {
		t.Errorf("call after Close: err = %v, want ErrClosed", err)
	}
}

func TestRelaunchAfterExit(t *testing.T) {
	t.Parallel()
	h := newHost(t, pluginRoot(t, "test/testplugins/echo"))
	pid := pidOf(t, h)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, 2*time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, err := call(t, h, "pid", `{}`)
		if err == nil {
			var p struct{ Pid int }
			if err := json.Unmarshal(out, &p); err != nil {
				t.Fatal(err)
			}
			if p.Pid == pid {
				t.Fatalf("still talking to killed pid %d", pid)
			}
			return
		}
		// The call racing the exit may fail with a transport error; the
		// next one must relaunch.
		if !errors.Is(err, component.ErrTransport) || time.Now().After(deadline) {
			t.Fatalf("call after kill: %v", err)
		}
	}
}

// hostChildEnv makes the test binary act as a host that launches the echo
// plugin, prints its pid and waits to be killed.
const hostChildEnv = "NEXUS_TEST_HOST_CHILD"

func runHostChild() {
	h := host.New(host.Options{})
	h.Discover([]manifest.Root{{Dir: os.Getenv(hostChildEnv), Explicit: true}})
	for _, name := range []string{"pid", "spawn"} {
		tool, err := h.Tools.Get(context.Background(), name)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		out, err := tool.Call(context.Background(), json.RawMessage(`{}`))
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(string(out))
	}
	time.Sleep(time.Hour)
}

func TestPluginAndItsChildrenDieWithKilledHost(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a host subprocess")
	}
	root := pluginRoot(t, "test/testplugins/echo")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostChildEnv+"="+root)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(stdout)
	var plugin, child struct{ Pid int }
	if err := dec.Decode(&plugin); err != nil || plugin.Pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("host child did not report a plugin pid: %v", err)
	}
	if err := dec.Decode(&child); err != nil || child.Pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("host child did not report the plugin's child pid: %v", err)
	}
	if !alive(plugin.Pid) || !alive(child.Pid) {
		t.Fatalf("plugin %d or its child %d not running while the host is", plugin.Pid, child.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	waitGone(t, plugin.Pid, time.Second)
	waitGone(t, child.Pid, time.Second)
}

func writeManifest(t *testing.T, dir string, edit func(string) string) {
	t.Helper()
	path := filepath.Join(dir, manifest.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		pkg   string
		tool  string
		setup func(t *testing.T, dir string)
		opts  func(*host.Options)
		want  []string
	}{
		{
			name:  "missing binary",
			pkg:   "test/testplugins/echo",
			tool:  "echo",
			setup: func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, "echo")) },
			want:  []string{"does not exist", "make plugins", "go build -o"},
		},
		{
			name: "not executable",
			pkg:  "test/testplugins/echo",
			tool: "echo",
			setup: func(t *testing.T, dir string) {
				bin := filepath.Join(dir, "echo")
				// Unlink first: the binary is hard-linked to the shared build.
				if err := testkitCopy(bin); err != nil {
					t.Fatal(err)
				}
				os.Chmod(bin, 0o644)
			},
			want: []string{"is not executable", "chmod +x"},
		},
		{
			name: "sha256 mismatch",
			pkg:  "test/testplugins/echo",
			tool: "echo",
			setup: func(t *testing.T, dir string) {
				writeManifest(t, dir, func(s string) string {
					return strings.Replace(s, "protocols = [1]", "protocols = [1]\nsha256 = \""+strings.Repeat("ab", 32)+"\"", 1)
				})
			},
			want: []string{"sha256 mismatch", strings.Repeat("ab", 32), "but binary"},
		},
		{
			name: "not a plugin",
			pkg:  "test/testplugins/garbage",
			tool: "garbage",
			want: []string{"handshake", "Nexus plugin", "garbage: refusing to be a plugin"},
		},
		{
			name: "handshake timeout",
			pkg:  "test/testplugins/hang",
			tool: "hang",
			opts: func(o *host.Options) { o.StartTimeout = 500 * time.Millisecond },
			want: []string{"did not complete the handshake in time"},
		},
		{
			name: "manifest and binary disagree",
			pkg:  "test/testplugins/echo",
			tool: "echo",
			setup: func(t *testing.T, dir string) {
				writeManifest(t, dir, func(s string) string {
					s = strings.Replace(s, `name = "fail"`, `name = "fail2"`, 1)
					return strings.Replace(s, `"text to echo back"`, `"changed"`, 1)
				})
			},
			want: []string{
				`- tool "fail2": declared in the manifest, not served by the binary`,
				`+ tool "fail": served by the binary, not declared in the manifest`,
				`~ agent "parrot": input_schema`,
				"nexus-host plugins manifest",
			},
		},
		{
			name: "unsupported protocol",
			pkg:  "test/testplugins/echo",
			tool: "echo",
			setup: func(t *testing.T, dir string) {
				writeManifest(t, dir, func(s string) string { return strings.Replace(s, "protocols = [1]", "protocols = [7]", 1) })
			},
			want: []string{"speaks protocols [7]", "this host speaks [1]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir, err := builder.PluginDir(root, tt.pkg)
			if err != nil {
				t.Fatal(err)
			}
			if tt.setup != nil {
				tt.setup(t, dir)
			}
			var opts []func(*host.Options)
			if tt.opts != nil {
				opts = append(opts, tt.opts)
			}
			h := newHost(t, root, opts...)
			_, err = h.Tools.Get(context.Background(), tt.tool)
			if !errors.Is(err, component.ErrLaunch) {
				t.Fatalf("err = %v, want ErrLaunch", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if n := h.Running(); n != 0 {
				t.Errorf("%d processes left running after a failed launch", n)
			}
		})
	}
}

// testkitCopy replaces a hard link with a private copy.
func testkitCopy(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o755)
}

func TestNameConflictsAndSuggestions(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, name := range []string{"echo", "echo2"} {
		dir, err := builder.PluginDir(filepath.Join(root, name), "test/testplugins/echo")
		if err != nil {
			t.Fatal(err)
		}
		writeManifest(t, dir, func(s string) string {
			return strings.Replace(s, `name = "echo"`+"\n"+`version`, `name = "`+name+`"`+"\n"+`version`, 1)
		})
		if err := os.Rename(dir, filepath.Join(root, name+"-plugin")); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(root, name))
	}
	h := host.New(host.Options{})
	t.Cleanup(func() { h.Close() })
	diags := h.Discover([]manifest.Root{{Dir: root, Explicit: true}})
	var conflict string
	for _, d := range diags {
		if strings.Contains(d.Message, `tool "echo" is declared by 2 plugins`) {
			conflict = d.String()
		}
	}
	if conflict == "" || !strings.Contains(conflict, filepath.Join(root, "echo-plugin", "nexus.toml")) || !strings.Contains(conflict, filepath.Join(root, "echo2-plugin", "nexus.toml")) {
		t.Fatalf("no conflict diagnostic naming both manifests in %v", diags)
	}
	if _, err := h.Tools.Get(context.Background(), "echo"); !errors.Is(err, component.ErrAmbiguous) || !strings.Contains(err.Error(), "echo/echo, echo2/echo") {
		t.Errorf("short name: err = %v, want ambiguous naming both", err)
	}
	// Only the echo2 plugin's binary-side name differs from its manifest, so
	// the qualified name of the first one must work.
	if _, err := call(t, h, "echo/echo", `{"text": "hi"}`); err != nil {
		t.Errorf("qualified name: %v", err)
	}
	_, err := h.Tools.Get(context.Background(), "ecko")
	if !errors.Is(err, component.ErrNotFound) || !strings.Contains(err.Error(), `did you mean`) || !strings.Contains(err.Error(), `"echo"`) {
		t.Errorf("unknown name: err = %v, want a suggestion", err)
	}
	if n := h.Running(); n != 1 {
		t.Errorf("%d processes, want 1", n)
	}
}
