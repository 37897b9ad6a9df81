// This file holds the Env every section gets: a private temp dir (also
// the plugins' TMPDIR, so their sockets are removed with it) and the
// helper binaries, each built once on first request.
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nexus-eval/nexus/internal/testkit"
)

// Env is shared by all sections of one run.
type Env struct {
	// Tmp is removed at exit, with everything below it.
	Tmp string

	builder *testkit.Builder
	built   map[string]bool
	dirs    []string // every temp dir created, checked at exit
}

func newEnv() (*Env, error) {
	tmp, err := os.MkdirTemp("", "nexus-bench-*")
	if err != nil {
		return nil, err
	}
	e := &Env{Tmp: tmp, dirs: []string{tmp}, built: map[string]bool{}}
	onExit(func() { os.RemoveAll(tmp) }) // first in, so it runs last
	// Plugins get the host's TMPDIR; go-plugin puts its unix sockets there,
	// and a killed plugin leaves its socket behind. Builds use it too.
	ptmp := filepath.Join(tmp, "tmp")
	if err := os.Mkdir(ptmp, 0o755); err != nil {
		return nil, err
	}
	os.Setenv("TMPDIR", ptmp)
	// The builder's dir lands below Tmp too (it honours TMPDIR).
	b, err := testkit.NewBuilder()
	if err != nil {
		return nil, err
	}
	e.builder = b
	onExit(b.Cleanup)
	return e, nil
}

// Binary builds the package at pkg (relative to the module root) once and
// returns the binary's path.
func (e *Env) Binary(pkg string) (string, error) {
	if !e.built[pkg] {
		e.built[pkg] = true
		fmt.Fprintf(os.Stderr, "bench:   go build ./%s\n", pkg)
	}
	return e.builder.Binary(pkg)
}

// PluginRoot returns a fresh plugin root under Tmp holding pkg's plugin
// directory (its nexus.toml and its freshly built binary).
func (e *Env) PluginRoot(name, pkg string) (string, error) {
	root, err := e.Dir(name)
	if err != nil {
		return "", err
	}
	if _, err := e.Binary(pkg); err != nil {
		return "", err
	}
	if _, err := e.builder.PluginDir(root, pkg); err != nil {
		return "", err
	}
	return root, nil
}

// Dir makes a new directory under Tmp.
func (e *Env) Dir(name string) (string, error) {
	d := filepath.Join(e.Tmp, name)
	return d, os.MkdirAll(d, 0o755)
}
