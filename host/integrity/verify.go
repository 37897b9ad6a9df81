package integrity

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/nexus-eval/nexus/manifest"
)

// ProblemKind classifies a Problem.
type ProblemKind string

const (
	// Tampered: the binary's sha256 differs from the lock's.
	Tampered ProblemKind = "tampered"
	// MissingBinary: the binary does not exist.
	MissingBinary ProblemKind = "missing binary"
	// Unsafe: the binary or its directory can be changed by other users.
	Unsafe ProblemKind = "unsafe"
	// Unreadable: the binary cannot be opened or read.
	Unreadable ProblemKind = "unreadable"
	// Moved: the manifest names another binary than the lock pins.
	Moved ProblemKind = "moved"
	// NotLocked: a discovered plugin has no lock entry.
	NotLocked ProblemKind = "not locked"
	// NotInstalled: a lock entry names no discovered plugin.
	NotInstalled ProblemKind = "not installed"
)

// Problem is one disagreement between a lock and the installed plugins.
type Problem struct {
	Kind   ProblemKind
	Plugin string
	// Binary is the binary concerned, when there is one.
	Binary string
	// Want and Got are the locked and actual sha256 of a Tampered binary.
	Want, Got string
	// Err is the underlying error, when there is one.
	Err error
}

func (p Problem) String() string {
	switch p.Kind {
	case Tampered:
		return fmt.Sprintf("plugin %q: binary %s changed since it was locked: lock has sha256 %s, binary has sha256 %s: rebuild it from trusted source, or run `nexus-host plugins lock` if the change is intended",
			p.Plugin, p.Binary, p.Want, p.Got)
	case MissingBinary:
		return fmt.Sprintf("plugin %q: binary %s does not exist: build it, or run `nexus-host plugins lock` after removing the plugin", p.Plugin, p.Binary)
	case NotLocked:
		return fmt.Sprintf("plugin %q is not in the lock file: run `nexus-host plugins lock` to pin it", p.Plugin)
	case NotInstalled:
		return fmt.Sprintf("plugin %q is in the lock file but was not discovered: install it, or run `nexus-host plugins lock` to drop it", p.Plugin)
	case Moved:
		return fmt.Sprintf("plugin %q: its manifest names binary %s, the lock pins %v: run `nexus-host plugins lock`", p.Plugin, p.Binary, p.Err)
	}
	return fmt.Sprintf("plugin %q: %s: %v", p.Plugin, p.Kind, p.Err)
}

// Verify checks every manifest's binary against the lock, and the lock
// against the manifests. Binaries are verified through Open (so the cache
// of verified file versions applies). Problems come back sorted by plugin.
func Verify(lock *Lock, ms []*manifest.Manifest) []Problem {
	var probs []Problem
	found := map[string]bool{}
	for _, m := range ms {
		name := m.Plugin.Name
		found[name] = true
		e, ok := lock.Entry(name)
		if !ok {
			probs = append(probs, Problem{Kind: NotLocked, Plugin: name, Binary: m.BinaryPath()})
			continue
		}
		bin := filepath.Clean(m.BinaryPath())
		if locked := lock.BinaryPath(e); locked != bin {
			probs = append(probs, Problem{Kind: Moved, Plugin: name, Binary: bin, Err: errors.New(locked)})
			continue
		}
		v, err := Open(bin, e.SHA256)
		if err == nil {
			v.Close()
			continue
		}
		p := Problem{Plugin: name, Binary: bin, Err: err}
		var ce *ChecksumError
		switch {
		case errors.As(err, &ce):
			p.Kind, p.Want, p.Got = Tampered, ce.Want, ce.Got
		case errors.Is(err, fs.ErrNotExist):
			p.Kind = MissingBinary
		case errors.Is(err, ErrUnsafe):
			p.Kind = Unsafe
		default:
			p.Kind = Unreadable
		}
		probs = append(probs, p)
	}
	for _, e := range lock.Plugins {
		if !found[e.Name] {
			probs = append(probs, Problem{Kind: NotInstalled, Plugin: e.Name, Binary: lock.BinaryPath(e)})
		}
	}
	slices.SortStableFunc(probs, func(a, b Problem) int { return cmp.Compare(a.Plugin, b.Plugin) })
	return probs
}
