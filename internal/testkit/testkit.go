// Package testkit builds real plugin binaries from source for tests and
// lays them out in plugin directories. Binaries are built once per test
// process and hard-linked into each test's own directory.
package testkit

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

// ModuleRoot is the directory holding go.mod.
var ModuleRoot = func() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}()

// Builder builds binaries into a private directory, each package once.
type Builder struct {
	dir string

	mu    sync.Mutex
	built map[string]*build
}

type build struct {
	once sync.Once
	path string
	err  error
}

// NewBuilder returns a Builder; call Cleanup when the tests end.
func NewBuilder() (*Builder, error) {
	dir, err := os.MkdirTemp("", "nexus-testkit-*")
	if err != nil {
		return nil, err
	}
	return &Builder{dir: dir, built: map[string]*build{}}, nil
}

// Cleanup removes every built binary.
func (b *Builder) Cleanup() { os.RemoveAll(b.dir) }

// Binary builds pkg (a path relative to the module root, like
// "plugins/tools/math") and returns the binary's path.
func (b *Builder) Binary(pkg string) (string, error) {
	b.mu.Lock()
	bl, ok := b.built[pkg]
	if !ok {
		bl = &build{}
		b.built[pkg] = bl
	}
	b.mu.Unlock()
	bl.once.Do(func() {
		out := filepath.Join(b.dir, strings.ReplaceAll(pkg, "/", "_"), filepath.Base(pkg))
		cmd := exec.Command("go", "build", "-o", out, "./"+pkg)
		cmd.Dir = ModuleRoot
		if msg, err := cmd.CombinedOutput(); err != nil {
			bl.err = fmt.Errorf("go build ./%s: %v\n%s", pkg, err, msg)
			return
		}
		bl.path = out
	})
	return bl.path, bl.err
}

// PluginDir makes dst/<base of pkg> a plugin directory: the package's
// nexus.toml (from the source tree) and its freshly built binary.
func (b *Builder) PluginDir(dst, pkg string) (string, error) {
	bin, err := b.Binary(pkg)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(dst, filepath.Base(pkg))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := CopyFile(filepath.Join(ModuleRoot, pkg, "nexus.toml"), filepath.Join(dir, "nexus.toml")); err != nil {
		return "", err
	}
	if err := LinkOrCopy(bin, filepath.Join(dir, filepath.Base(bin))); err != nil {
		return "", err
	}
	return dir, nil
}

// LinkOrCopy hard-links src to dst, copying when linking is impossible.
func LinkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return CopyFile(src, dst)
}

// CopyFile copies src to dst keeping its permission bits.
func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fi.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Main runs a test package that builds plugin binaries: setup receives the
// builder before the tests run (to keep it, or to build binaries up
// front); afterwards the binaries are removed, and goroutines left running
// fail the run.
func Main(m *testing.M, setup func(b *Builder) error) {
	b, err := NewBuilder()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := setup(b); err != nil {
		b.Cleanup()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	b.Cleanup()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
