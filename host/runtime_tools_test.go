package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/execution"
)

// sandboxRoot lays plugins out where the sandbox's user can reach them.
func sandboxRoot(t *testing.T, pkgs ...string) string {
	t.Helper()
	root := pluginRoot(t, pkgs...)
	for d := root; d != filepath.Dir(d) && strings.HasPrefix(d, os.TempDir()+"/"); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	return root
}

func newExec(t *testing.T, h *host.Host) (*execution.Execution, context.Context) {
	t.Helper()
	e, err := h.NewExecution(host.ExecutionOptions{RunID: "test", InstanceID: t.Name()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, execution.With(context.Background(), e)
}

func callIn(t *testing.T, ctx context.Context, h *host.Host, name, input string) (json.RawMessage, error) {
	t.Helper()
	tool, err := h.Tools.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return tool.Call(ctx, json.RawMessage(input))
}

func TestRuntimeToolsRunInTheirExecutionsSandbox(t *testing.T) {
	t.Parallel()
	h := newHost(t, sandboxRoot(t, "plugins/tools/shell"))

	if _, err := callIn(t, context.Background(), h, "write_file", `{"path":"a.txt","content":"x"}`); !errors.Is(err, execution.ErrNoExecution) {
		t.Fatalf("runtime tool without an execution: err = %v, want ErrNoExecution", err)
	}

	a, actx := newExec(t, h)
	_, bctx := newExec(t, h)
	if _, err := callIn(t, actx, h, "write_file", `{"path":"sub/a.txt","content":"hello"}`); err != nil {
		t.Fatal(err)
	}
	out, err := callIn(t, actx, h, "run_command", `{"command":"cat sub/a.txt; touch /usr/nexus-escape; echo $?"}`)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		ExitCode int    `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	json.Unmarshal(out, &res)
	if !strings.HasPrefix(res.Stdout, "hello") || !strings.Contains(res.Stderr, "Read-only") {
		t.Errorf("run_command = %+v: want the file's content and a read-only failure outside the work dir", res)
	}
	if _, err := os.Stat(filepath.Join("/usr", "nexus-escape")); err == nil {
		t.Error("a sandboxed command wrote to the host's /usr")
	}
	// Another execution has its own work dir.
	if _, err := callIn(t, bctx, h, "read_file", `{"path":"sub/a.txt"}`); err == nil {
		t.Error("a second execution sees the first one's files")
	}
	rt, err := a.Runtime(actx, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := rt.Dir()
	if b, err := os.ReadFile(filepath.Join(dir, "sub/a.txt")); err != nil || string(b) != "hello" {
		t.Errorf("file in the work dir = %q, %v", b, err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("work dir %s survives Close: %v", dir, err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
