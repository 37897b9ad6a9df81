package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Runtime is where the RUNTIME tools of one execution run.
type Runtime interface {
	// Name is the name of the provider that made the runtime.
	Name() string
	// Dir is the work dir, as a host path. Inside the runtime it has the
	// same path and is the working directory of every command.
	Dir() string
	// Command returns a command that runs name inside the runtime with the
	// work dir as its working directory, in its own process group. The
	// caller may set Env, Stdin, Stdout, Stderr, ExtraFiles and WaitDelay
	// before Start; Path, Args, Dir and SysProcAttr belong to the runtime.
	// Env starts empty (not the host's environment): the command sees
	// exactly the variables the caller puts there (the sandbox adds PWD).
	// A bare name is looked up in the host's PATH (the host is visible
	// inside the sandbox at the same paths). Cancelling ctx kills the
	// command's process group. Start fails once the runtime is closed.
	Command(ctx context.Context, name string, args ...string) *exec.Cmd
	// Close kills every process started in the runtime and removes the work
	// dir. It is safe to call twice. It must not run concurrently with the
	// Start of one of the runtime's commands.
	Close() error
}

// Provider creates runtimes.
type Provider interface {
	Name() string
	New(ctx context.Context, opts Options) (Runtime, error)
}

// Options configure one runtime.
type Options struct {
	// Network lets commands reach the network. Only the sandbox can deny
	// it; the local runtime always has the host's network.
	Network bool
	// Limits are the resource limits of every process in the runtime.
	Limits Limits
	// Binds are host dirs bound read-write at the same path inside the
	// runtime (the host uses this for go-plugin's socket dir). When the host
	// runs as root, the sandbox user (see [Sandbox]) must be able to reach
	// them and, to write there, own them.
	Binds []string
	// ReadOnly are host paths bound read-only at the same path inside; the
	// sandbox shows the whole host read-only already, except /tmp, so this
	// is for paths under /tmp (a plugin binary, say).
	ReadOnly []string
	// BaseDir is where work dirs are created; default os.TempDir().
	BaseDir string
}

// Limits are per-process resource limits (rlimits); zero means no limit.
// See the package documentation for how they are applied.
type Limits struct {
	// CPUSeconds is the CPU time a process may use (RLIMIT_CPU); then it is
	// killed.
	CPUSeconds int
	// MemoryBytes is the private writable memory (heap, anonymous mappings)
	// of a process (RLIMIT_DATA); a Go binary needs about 128 MiB to start.
	MemoryBytes int64
	// Processes is how many processes and threads the runtime's user may
	// have (RLIMIT_NPROC); it contains a fork bomb.
	Processes int
	// FileSizeBytes is the largest file a process may write (RLIMIT_FSIZE).
	FileSizeBytes int64
}

func (l Limits) validate() error {
	if l.CPUSeconds < 0 || l.MemoryBytes < 0 || l.Processes < 0 || l.FileSizeBytes < 0 {
		return fmt.Errorf("negative limit in %+v: use 0 for no limit", l)
	}
	return nil
}

// shim returns the argv prefix that applies the limits before exec-ing the
// command, or nil when there is no limit.
func (l Limits) shim() []string {
	var set []string
	if l.CPUSeconds > 0 {
		set = append(set, fmt.Sprintf("ulimit -t %d", l.CPUSeconds))
	}
	if l.MemoryBytes > 0 {
		set = append(set, fmt.Sprintf("ulimit -d %d", max(l.MemoryBytes/1024, 1)))
	}
	if l.FileSizeBytes > 0 {
		set = append(set, fmt.Sprintf("ulimit -f %d", max(l.FileSizeBytes/512, 1)))
	}
	if l.Processes > 0 {
		// bash and busybox spell it -u, dash -p.
		set = append(set, fmt.Sprintf("{ ulimit -u %d 2>/dev/null || ulimit -p %d; }", l.Processes, l.Processes))
	}
	if len(set) == 0 {
		return nil
	}
	script := strings.Join(set, " && ") +
		` || { echo "runtime: cannot apply resource limits" >&2; exit 126; }; exec "$@"`
	return []string{"/bin/sh", "-c", script, "nexus-limits"}
}

// ErrClosed is the error of starting a command of a closed runtime.
var ErrClosed = errors.New("runtime is closed")

// Providers is a registry of runtime providers by name.
type Providers struct {
	mu sync.RWMutex
	m  map[string]Provider
}

// NewProviders returns a registry holding ps; it panics on a duplicate
// name, which is a programming error.
func NewProviders(ps ...Provider) *Providers {
	r := &Providers{m: map[string]Provider{}}
	for _, p := range ps {
		if err := r.Register(p); err != nil {
			panic(err)
		}
	}
	return r
}

// DefaultProviders returns a registry with "local" and "sandbox".
func DefaultProviders() *Providers {
	return NewProviders(Local{}, &Sandbox{})
}

// Register adds p; a name taken already is an error.
func (r *Providers) Register(p Provider) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := p.Name()
	if name == "" {
		return errors.New("runtime provider: empty name")
	}
	if _, ok := r.m[name]; ok {
		return fmt.Errorf("runtime provider %q: registered twice", name)
	}
	r.m[name] = p
	return nil
}

// Get returns the provider called name.
func (r *Providers) Get(name string) (Provider, error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if p, ok := r.m[name]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("runtime provider %q: unknown: choose one of %s", name, strings.Join(r.namesLocked(), ", "))
}

// Names lists the registered providers, sorted.
func (r *Providers) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.namesLocked()
}

func (r *Providers) namesLocked() []string {
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// procs is what both runtimes share: the work dir, the commands handed out
// and Close.
type procs struct {
	name string
	dir  string

	mu     sync.Mutex
	closed bool
	cmds   []*exec.Cmd
	err    error
}

func (p *procs) Name() string { return p.name }
func (p *procs) Dir() string  { return p.dir }

// prepare makes cmd a command of the runtime.
func (p *procs) prepare(cmd *exec.Cmd, dir string) *exec.Cmd {
	cmd.Dir = dir
	cmd.Env = []string{}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		cmd.Err = fmt.Errorf("runtime %s: %w", p.name, ErrClosed)
		return cmd
	}
	p.cmds = append(p.cmds, cmd)
	return cmd
}

func (p *procs) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return p.err
	}
	p.closed = true
	for _, cmd := range p.cmds {
		if cmd.Process != nil {
			// The group outlives its leader when the leader has exited
			// and left children behind, so kill it even then.
			_ = killGroup(cmd.Process.Pid)
		}
	}
	p.cmds = nil
	if err := removeAll(p.dir); err != nil {
		p.err = fmt.Errorf("runtime %s: remove work dir: %w", p.name, err)
	}
	return p.err
}

func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// removeAll removes dir although processes that are dying may still write
// to it and a command may have left directories without write permission.
func removeAll(dir string) error {
	var err error
	for try := range 40 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
		if try == 0 {
			_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					_ = os.Chmod(path, 0o700)
				}
				return nil
			})
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// mkWorkDir creates a private work dir under base.
func mkWorkDir(base string) (string, error) {
	if base == "" {
		base = os.TempDir()
	}
	dir, err := os.MkdirTemp(base, "nexus-runtime-*")
	if err != nil {
		return "", fmt.Errorf("create work dir: %w", err)
	}
	// Resolve symlinks (a symlinked TMPDIR) so the path is the same inside
	// the sandbox and in error messages.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// lookPath resolves a bare command name in the host's PATH; a name that is
// not found is kept, to be looked up by the runtime.
func lookPath(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return name
}
