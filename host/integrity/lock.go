package integrity

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/nexus-eval/nexus/manifest"
)

// LockFileName is the lock file's default name.
const LockFileName = "nexus.lock"

// LockVersion is the lock file schema this package reads and writes.
const LockVersion = 1

// maxLockSize bounds the lock file read: a few hundred bytes per plugin.
const maxLockSize = 16 << 20

// Lock is a parsed lock file.
type Lock struct {
	Version int     `toml:"version"`
	Plugins []Entry `toml:"plugin"`

	// Path is the file the lock was read from or written to.
	Path string `toml:"-"`
}

// Entry pins one plugin binary. Paths are relative to the lock file's
// directory (absolute when that is impossible).
type Entry struct {
	Name     string `toml:"name"`
	Version  string `toml:"version"`
	Manifest string `toml:"manifest"`
	Binary   string `toml:"binary"`
	SHA256   string `toml:"sha256"`
}

// abs resolves p, relative to the lock file's directory.
func (l *Lock) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(filepath.Dir(l.Path), p)
}

// ManifestPath is the entry's manifest, as an absolute path.
func (l *Lock) ManifestPath(e Entry) string { return l.abs(e.Manifest) }

// BinaryPath is the entry's binary, as an absolute path.
func (l *Lock) BinaryPath(e Entry) string { return l.abs(e.Binary) }

// Entry returns the entry of the plugin name.
func (l *Lock) Entry(name string) (Entry, bool) {
	i := slices.IndexFunc(l.Plugins, func(e Entry) bool { return e.Name == name })
	if i < 0 {
		return Entry{}, false
	}
	return l.Plugins[i], true
}

// Pin returns the sha256 the lock pins for m's binary: the entry of m's
// plugin, when it names the same binary file.
func (l *Lock) Pin(m *manifest.Manifest) (string, bool) {
	e, ok := l.Entry(m.Plugin.Name)
	if !ok || l.BinaryPath(e) != filepath.Clean(m.BinaryPath()) {
		return "", false
	}
	return e.SHA256, true
}

// Write hashes the binary of every manifest and writes the lock file at
// path, replacing it atomically. Every binary must exist.
func Write(path string, ms []*manifest.Manifest) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	l := &Lock{Version: LockVersion, Path: abs, Plugins: []Entry{}}
	var errs []error
	for _, m := range ms {
		bin := m.BinaryPath()
		sum, err := FileSHA256(bin)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				err = fmt.Errorf("binary %s does not exist: build it first", bin)
			}
			errs = append(errs, fmt.Errorf("plugin %q (%s): %w", m.Plugin.Name, m.Path, err))
			continue
		}
		l.Plugins = append(l.Plugins, Entry{
			Name: m.Plugin.Name, Version: m.Plugin.Version,
			Manifest: l.rel(m.Path), Binary: l.rel(bin), SHA256: sum,
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("lock %s: nothing written:\n%w", path, err)
	}
	slices.SortFunc(l.Plugins, func(a, b Entry) int { return cmp.Compare(a.Name, b.Name) })
	data, err := l.Marshal()
	if err != nil {
		return nil, err
	}
	if err := writeAtomic(abs, data); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return l, nil
}

func (l *Lock) rel(p string) string {
	r, err := filepath.Rel(filepath.Dir(l.Path), p)
	if err != nil {
		return p
	}
	return filepath.ToSlash(r)
}

const header = "# nexus.lock: the sha256 of every plugin binary, written by `nexus-host plugins lock`.\n" +
	"# Check it with `nexus-host plugins verify`; rewrite it after rebuilding a plugin.\n\n"

// Marshal encodes the lock as TOML.
func (l *Lock) Marshal() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := toml.NewEncoder(&buf)
	enc.SetIndentTables(false)
	if err := enc.Encode(l); err != nil {
		return nil, fmt.Errorf("encode lock: %w", err)
	}
	return buf.Bytes(), nil
}

func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".nexus-lock-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp.Name(), 0o644)); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Read reads and checks the lock file at path. Parsing is strict: unknown
// keys are errors. Every error starts with path:line:col.
func Read(path string) (*Lock, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no lock file: write it with `nexus-host plugins lock`: %w", path, fs.ErrNotExist)
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxLockSize {
		return nil, fmt.Errorf("%s:1:1: not a regular file under %d MiB: rewrite it with `nexus-host plugins lock`", path, maxLockSize>>20)
	}
	data := make([]byte, fi.Size())
	if _, err := f.ReadAt(data, 0); err != nil && fi.Size() > 0 {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	l, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	l.Path = abs
	return l, nil
}

// Parse decodes and checks lock file content; path is used in errors.
func Parse(path string, data []byte) (*Lock, error) {
	l := new(Lock)
	err := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields().Decode(l)
	var strict *toml.StrictMissingError
	var decode *toml.DecodeError
	switch {
	case err == nil:
	case errors.As(err, &strict):
		var errs []error
		for i := range strict.Errors {
			e := &strict.Errors[i]
			line, col := e.Position()
			errs = append(errs, fmt.Errorf("%s:%d:%d: unknown key %q: remove it, or rewrite the file with `nexus-host plugins lock`",
				path, line, col, strings.Join(e.Key(), ".")))
		}
		return nil, errors.Join(errs...)
	case errors.As(err, &decode):
		line, col := decode.Position()
		return nil, fmt.Errorf("%s:%d:%d: invalid TOML: %s", path, line, col, strings.TrimPrefix(decode.Error(), "toml: "))
	default:
		return nil, fmt.Errorf("%s:1:1: %v", path, err)
	}
	if errs := l.check(path, data); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return l, nil
}

// check validates the decoded lock; positions come from locating the key
// in the file.
func (l *Lock) check(path string, data []byte) []error {
	var errs []error
	at := func(plugin int, key, format string, args ...any) {
		line := keyLine(data, plugin, key)
		errs = append(errs, fmt.Errorf("%s:%d:1: %s", path, line, fmt.Sprintf(format, args...)))
	}
	switch {
	case l.Version == 0:
		at(-1, "version", "version is missing: add version = %d, or rewrite the file with `nexus-host plugins lock`", LockVersion)
	case l.Version != LockVersion:
		at(-1, "version", "version = %d is not %d, the only lock version this host reads: rewrite the file with `nexus-host plugins lock`", l.Version, LockVersion)
	}
	seen := map[string]int{}
	for i, e := range l.Plugins {
		label := fmt.Sprintf("plugin #%d", i+1)
		if e.Name != "" {
			label = fmt.Sprintf("plugin %q", e.Name)
		}
		for _, f := range [...]struct{ key, val string }{{"name", e.Name}, {"manifest", e.Manifest}, {"binary", e.Binary}, {"sha256", e.SHA256}} {
			if f.val == "" {
				at(i, f.key, "%s: %s is missing or empty", label, f.key)
			}
		}
		if e.SHA256 != "" && !isSHA256(e.SHA256) {
			at(i, "sha256", "%s: sha256 %q is not 64 lower-case hex digits", label, e.SHA256)
		}
		if j, dup := seen[e.Name]; dup && e.Name != "" {
			at(i, "name", "%s is locked twice (also entry #%d): keep one", label, j+1)
		}
		seen[e.Name] = i
	}
	return errs
}

// keyLine finds the 1-based line of key in the plugin-th [[plugin]] table
// (-1: before any table), or the table's header line, or 1.
func keyLine(data []byte, plugin int, key string) int {
	table, header := -1, 1
	for n, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[[") {
			table++
			if table == plugin {
				header = n + 1
			}
			continue
		}
		if table != plugin {
			continue
		}
		if k, _, ok := strings.Cut(t, "="); ok && strings.Trim(strings.TrimSpace(k), `"'`) == key {
			return n + 1
		}
	}
	return header
}

func isSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
