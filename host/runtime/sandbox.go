package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

// ErrUnavailable is wrapped by the error of a provider that cannot run on
// this machine.
var ErrUnavailable = errors.New("unavailable")

// nobody is the default sandbox user of a root host.
const nobody = 65534

// Sandbox is the "sandbox" provider: bubblewrap. The zero value is ready to
// use.
type Sandbox struct {
	// Bwrap is the bubblewrap binary; empty means "bwrap" in PATH.
	Bwrap string
	// UID and GID are who the sandbox runs as when the host runs as root
	// (root is exempt from the process limit); 0 means 65534 (nobody).
	// A host that is not root runs the sandbox as itself.
	UID, GID int
}

// Name returns "sandbox".
func (*Sandbox) Name() string { return "sandbox" }

// Available reports why the sandbox cannot run here, or nil. It probes
// bubblewrap once per binary and user (starting it with the namespaces the
// sandbox uses) and remembers the answer.
func (s *Sandbox) Available() error {
	_, err := s.bwrap()
	return err
}

func (s *Sandbox) cred() *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	uid, gid := s.UID, s.GID
	if uid == 0 {
		uid = nobody
	}
	if gid == 0 {
		gid = nobody
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

type probeKey struct {
	bwrap    string
	uid, gid uint32
}

var probes sync.Map // probeKey -> func() (string, error)

// bwrap returns the path of a bubblewrap that works, or why there is none.
func (s *Sandbox) bwrap() (string, error) {
	name := s.Bwrap
	if name == "" {
		name = "bwrap"
	}
	key := probeKey{bwrap: name}
	if c := s.cred(); c != nil {
		key.uid, key.gid = c.Uid, c.Gid
	}
	f, _ := probes.LoadOrStore(key, sync.OnceValues(func() (string, error) { return s.probe(name) }))
	return f.(func() (string, error))()
}

func (s *Sandbox) probe(name string) (string, error) {
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("sandbox: bubblewrap not found (%s): install it (apt-get install bubblewrap) or use the local runtime: %w", name, ErrUnavailable)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(path, "--unshare-all", "--die-with-parent", "--new-session",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "true")
	cmd.Dir = "/"
	cmd.Env = []string{}
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred(), Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("sandbox: bubblewrap (%s) cannot create namespaces: %s: allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces>0) or use the local runtime: %w", path, msg, ErrUnavailable)
	}
	return path, nil
}

// New creates a sandbox runtime: it fails with an error wrapping
// [ErrUnavailable] when bubblewrap is missing or cannot create namespaces.
func (s *Sandbox) New(_ context.Context, opts Options) (Runtime, error) {
	bwrap, err := s.bwrap()
	if err != nil {
		return nil, err
	}
	if err := opts.Limits.validate(); err != nil {
		return nil, fmt.Errorf("runtime sandbox: %w", err)
	}
	cred := s.cred()
	for _, p := range append(append([]string{opts.BaseDir}, opts.Binds...), opts.ReadOnly...) {
		if p == "" {
			continue
		}
		if err := reachable(p, cred); err != nil {
			return nil, fmt.Errorf("runtime sandbox: %w", err)
		}
	}
	dir, err := mkWorkDir(opts.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("runtime sandbox: %w", err)
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			_ = os.Remove(dir)
			return nil, fmt.Errorf("runtime sandbox: hand the work dir to the sandbox user: %w", err)
		}
	}
	args := []string{"--die-with-parent", "--unshare-all"}
	if opts.Network {
		args = append(args, "--share-net")
	}
	args = append(args, "--new-session",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp")
	for _, p := range opts.ReadOnly {
		args = append(args, "--ro-bind", p, p)
	}
	for _, p := range opts.Binds {
		args = append(args, "--bind", p, p)
	}
	args = append(args, "--bind", dir, dir, "--chdir", dir, "--")
	args = append(args, opts.Limits.shim()...)
	return &sandbox{procs: procs{name: "sandbox", dir: dir}, bwrap: bwrap, args: args, cred: cred}, nil
}

type sandbox struct {
	procs
	bwrap string
	args  []string
	cred  *syscall.Credential
}

// Command runs bwrap, which runs name. bwrap passes its environment, which
// is the Cmd's Env, to name unchanged: with Env empty by default the
// command sees only what the caller sets (the effect of --clearenv plus
// --setenv, which Command cannot use since the caller sets Env later).
func (r *sandbox) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string(nil), r.args...), lookPath(name)), args...)
	cmd := r.prepare(exec.CommandContext(ctx, r.bwrap, argv...), r.dir)
	cmd.SysProcAttr.Credential = r.cred
	return cmd
}

// reachable checks that the sandbox user can reach path, for bubblewrap
// opens the sources of binds as that user.
func reachable(path string, cred *syscall.Credential) error {
	if cred == nil {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for d := real; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		perm := fi.Mode().Perm()
		ok := perm&0o001 != 0 ||
			st.Uid == cred.Uid && perm&0o100 != 0 ||
			st.Gid == cred.Gid && perm&0o010 != 0
		if !ok {
			return fmt.Errorf("%s: the sandbox user %d cannot enter %s (mode %v): make it searchable (chmod o+x) or choose another dir", path, cred.Uid, d, perm)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// User returns who the sandbox runs as when that is not the host's own
// user (the host runs as root): dirs bound into the sandbox must be
// writable by that user.
func (s *Sandbox) User() (uid, gid int, ok bool) {
	c := s.cred()
	if c == nil {
		return 0, 0, false
	}
	return int(c.Uid), int(c.Gid), true
}
