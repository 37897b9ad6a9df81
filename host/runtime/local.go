package runtime

import (
	"context"
	"fmt"
	"os/exec"
)

// Local is the "local" provider: a private work dir on the host and
// resource limits, without isolation.
type Local struct{}

// Name returns "local".
func (Local) Name() string { return "local" }

// New creates a local runtime. Options.Network, Binds and ReadOnly mean
// nothing here: the host's network and files are all reachable.
func (Local) New(_ context.Context, opts Options) (Runtime, error) {
	if err := opts.Limits.validate(); err != nil {
		return nil, fmt.Errorf("runtime local: %w", err)
	}
	dir, err := mkWorkDir(opts.BaseDir)
	if err != nil {
		return nil, fmt.Errorf("runtime local: %w", err)
	}
	return &local{procs: procs{name: "local", dir: dir}, shim: opts.Limits.shim()}, nil
}

type local struct {
	procs
	shim []string
}

func (r *local) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	argv := append(append(append([]string(nil), r.shim...), lookPath(name)), args...)
	return r.prepare(exec.CommandContext(ctx, argv[0], argv[1:]...), r.dir)
}
