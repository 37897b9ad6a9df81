package integrity

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/manifest"
)

// plugins lays out a plugin dir per name under dir/plugins, each with a
// manifest (in memory) and a private binary, and returns the manifests.
func plugins(t *testing.T, dir string, names ...string) []*manifest.Manifest {
	t.Helper()
	var ms []*manifest.Manifest
	for _, n := range names {
		pdir := filepath.Join(dir, "plugins", n)
		must(t, os.MkdirAll(pdir, 0o755))
		copyBinary(t, pdir, n, n)
		ms = append(ms, &manifest.Manifest{
			Schema: manifest.SchemaVersion,
			Plugin: manifest.Plugin{Name: n, Version: "1.0.0", Binary: n, Protocols: []int{1}},
			Path:   filepath.Join(pdir, manifest.FileName),
		})
	}
	return ms
}

func TestLockRoundTrip(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	ms := plugins(t, dir, "zeta", "alpha")
	path := filepath.Join(dir, LockFileName)
	written, err := Write(path, ms)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"version = 1", "[[plugin]]", "name = 'alpha'", "manifest = 'plugins/alpha/nexus.toml'", "binary = 'plugins/alpha/alpha'"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("lock file does not contain %q:\n%s", want, data)
		}
	}
	if strings.Index(string(data), "alpha") > strings.Index(string(data), "zeta") {
		t.Errorf("entries not sorted by name:\n%s", data)
	}
	read, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := gocmp.Diff(written, read); diff != "" {
		t.Errorf("Read(Write()) (-written +read):\n%s", diff)
	}
	for _, m := range ms {
		pin, ok := read.Pin(m)
		want, _ := FileSHA256(m.BinaryPath())
		if !ok || pin != want {
			t.Errorf("Pin(%s) = %q, %v; want %q", m.Plugin.Name, pin, ok, want)
		}
	}
	if probs := Verify(read, ms); len(probs) != 0 {
		t.Errorf("Verify of a fresh lock: %v", probs)
	}
	// The lock moves with its directory: paths are relative.
	moved := filepath.Join(privateDir(t), "moved")
	must(t, os.Rename(dir, moved))
	l, err := Read(filepath.Join(moved, LockFileName))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.BinaryPath(l.Plugins[0]), filepath.Join(moved, "plugins", "alpha", "alpha"); got != want {
		t.Errorf("BinaryPath after moving = %s, want %s", got, want)
	}
}

func TestWriteRefusesMissingBinary(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	ms := plugins(t, dir, "good", "gone")
	must(t, os.Remove(ms[1].BinaryPath()))
	path := filepath.Join(dir, LockFileName)
	_, err := Write(path, ms)
	if err == nil || !strings.Contains(err.Error(), `plugin "gone"`) || !strings.Contains(err.Error(), "does not exist: build it first") {
		t.Fatalf("err = %v, want one naming the missing binary", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a lock was written despite the error: %v", err)
	}
}

func TestVerifyReportsEveryProblem(t *testing.T) {
	t.Parallel()
	dir := privateDir(t)
	ms := plugins(t, dir, "tampered", "missing", "fine", "unlocked", "uninstalled", "unsafe", "moved")
	lock, err := Write(filepath.Join(dir, LockFileName), ms)
	if err != nil {
		t.Fatal(err)
	}
	lock.Plugins = removeEntry(lock.Plugins, "unlocked")
	tamperedBin := ms[0].BinaryPath()
	want, _ := FileSHA256(tamperedBin)
	f, err := os.OpenFile(tamperedBin, os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	f.Write([]byte("tampered after locking"))
	f.Close()
	got, _ := FileSHA256(tamperedBin)
	must(t, os.Remove(ms[1].BinaryPath()))
	must(t, os.Chmod(ms[5].BinaryPath(), 0o777))
	ms[6].Plugin.Binary = "elsewhere"
	installed := []*manifest.Manifest{ms[0], ms[1], ms[2], ms[3], ms[5], ms[6]}

	probs := Verify(lock, installed)
	var kinds []string
	for _, p := range probs {
		kinds = append(kinds, p.Plugin+": "+string(p.Kind))
	}
	wantKinds := []string{"missing: missing binary", "moved: moved", "tampered: tampered", "uninstalled: not installed", "unlocked: not locked", "unsafe: unsafe"}
	if diff := gocmp.Diff(wantKinds, kinds); diff != "" {
		t.Fatalf("problems (-want +got):\n%s\n%v", diff, probs)
	}
	tp := probs[2]
	if tp.Want != want || tp.Got != got {
		t.Errorf("tampered: want %s got %s, want %s got %s", tp.Want, tp.Got, want, got)
	}
	for _, p := range probs {
		msg := p.String()
		if !strings.Contains(msg, p.Plugin) || !strings.Contains(msg, ":") {
			t.Errorf("problem message %q does not name the plugin", msg)
		}
		if p.Kind == Tampered && (!strings.Contains(msg, want) || !strings.Contains(msg, got) || !strings.Contains(msg, "nexus-host plugins lock")) {
			t.Errorf("tampered message lacks the digests or the fix: %s", msg)
		}
	}
}

func removeEntry(es []Entry, name string) []Entry {
	var out []Entry
	for _, e := range es {
		if e.Name != name {
			out = append(out, e)
		}
	}
	return out
}

func TestReadErrorsArePositioned(t *testing.T) {
	t.Parallel()
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	entry := "[[plugin]]\nname = \"math\"\nversion = \"1\"\nmanifest = \"m/nexus.toml\"\nbinary = \"m/math\"\nsha256 = \"" + sum + "\"\n"
	tests := []struct {
		name, content string
		want          []string
	}{
		{"unknown key", "version = 1\n" + entry + "colour = \"red\"\n", []string{"nexus.lock:8:1: unknown key \"plugin.colour\""}},
		{"invalid toml", "version = 1\n[[plugin]\n", []string{"nexus.lock:2:", "invalid TOML"}},
		{"wrong type", "version = \"one\"\n", []string{"nexus.lock:1:", "invalid TOML"}},
		{"missing version", entry, []string{"nexus.lock:1:1: version is missing"}},
		{"future version", "version = 2\n" + entry, []string{"nexus.lock:1:1: version = 2 is not 1"}},
		{"bad sha256", "version = 1\n" + strings.Replace(entry, sum, "ABC", 1), []string{`nexus.lock:7:1: plugin "math": sha256 "ABC" is not 64 lower-case hex digits`}},
		{"empty binary", "version = 1\n" + strings.Replace(entry, `"m/math"`, `""`, 1), []string{`nexus.lock:6:1: plugin "math": binary is missing or empty`}},
		{"missing name", "version = 1\n" + strings.Replace(entry, "name = \"math\"\n", "", 1), []string{`nexus.lock:2:1: plugin #1: name is missing or empty`}},
		{"duplicate", "version = 1\n" + entry + entry, []string{`nexus.lock:9:1: plugin "math" is locked twice (also entry #1)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(privateDir(t), LockFileName)
			must(t, os.WriteFile(path, []byte(tt.content), 0o644))
			_, err := Read(path)
			if err == nil {
				t.Fatal("Read succeeded, want an error")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+"/", "")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
			}
		})
	}
	t.Run("no file", func(t *testing.T) {
		t.Parallel()
		_, err := Read(filepath.Join(privateDir(t), LockFileName))
		if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "nexus-host plugins lock") {
			t.Errorf("err = %v, want ErrNotExist saying how to write one", err)
		}
	})
}
