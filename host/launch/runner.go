package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
)

// cmdRunner runs a plugin command go-plugin did not build itself (one
// wrapped in a sandbox). go-plugin only puts its unix sockets in a chosen
// directory when a runner is given, and a sandboxed plugin can reach no
// other.
type cmdRunner struct {
	cmd            *exec.Cmd
	stdout, stderr io.ReadCloser
}

// runnerFor returns go-plugin's RunnerFunc for cmd. The socket dir
// go-plugin creates is handed to the owner of its parent, the sandbox's
// user, so the plugin can create its sockets there.
func runnerFor(cmd *exec.Cmd) func(hclog.Logger, *exec.Cmd, string) (runner.Runner, error) {
	return func(_ hclog.Logger, spec *exec.Cmd, sockets string) (runner.Runner, error) {
		if err := shareWithParentOwner(sockets); err != nil {
			return nil, err
		}
		// spec carries go-plugin's handshake environment.
		c := cmd
		c.Env = append(c.Env, spec.Env...)
		stdout, err := c.StdoutPipe()
		if err != nil {
			return nil, err
		}
		stderr, err := c.StderrPipe()
		if err != nil {
			return nil, err
		}
		return &cmdRunner{cmd: c, stdout: stdout, stderr: stderr}, nil
	}
}

func shareWithParentOwner(dir string) error {
	fi, err := os.Stat(dir + "/..")
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || int(st.Uid) == os.Geteuid() {
		return nil
	}
	if err := os.Chown(dir, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("hand socket dir to the sandbox user: %w", err)
	}
	return nil
}

func (r *cmdRunner) Start(context.Context) error { return r.cmd.Start() }
func (r *cmdRunner) Wait(context.Context) error  { return r.cmd.Wait() }

func (r *cmdRunner) Kill(context.Context) error {
	if r.cmd.Process == nil {
		return nil
	}
	if err := r.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func (r *cmdRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *cmdRunner) Stderr() io.ReadCloser { return r.stderr }
func (r *cmdRunner) Name() string          { return r.cmd.Path }

func (r *cmdRunner) ID() string {
	if r.cmd.Process == nil {
		return ""
	}
	return fmt.Sprint(r.cmd.Process.Pid)
}

func (r *cmdRunner) Diagnose(context.Context) string {
	return "the plugin runs inside a runtime: " + r.cmd.String()
}

// The sandbox sees the socket dir at the same path, so addresses need no
// translation.
func (r *cmdRunner) PluginToHost(n, a string) (string, string, error) { return n, a, nil }
func (r *cmdRunner) HostToPlugin(n, a string) (string, string, error) { return n, a, nil }

var _ runner.Runner = (*cmdRunner)(nil)
