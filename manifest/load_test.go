package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// manifestFor returns a small valid manifest whose binary is bin.
func manifestFor(name, bin string) string {
	return `schema = 1

[plugin]
name = "` + name + `"
version = "1.0.0"
binary = "` + bin + `"
protocols = [1]

[[tool]]
name = "add"
input_schema = '{"type": "object"}'
output_schema = '{"type": "object"}'
`
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	mkdirs(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		bin  string
		// setup builds the plugin directory "$TMP/p" (holding nexus.toml)
		// and anything around it; it returns the path to load.
		setup func(t *testing.T, tmp string) string
		want  string // diagnostics, with the temp dir written $TMP
	}{{
		name:  "binary not built yet",
		bin:   "bin/calc",
		setup: func(t *testing.T, tmp string) string { return filepath.Join(tmp, "p", FileName) },
	}, {
		name: "binary symlinked inside the plugin dir",
		bin:  "calc",
		setup: func(t *testing.T, tmp string) string {
			writeFile(t, filepath.Join(tmp, "p", "build", "calc"), "#!/bin/sh\n")
			symlink(t, "build/calc", filepath.Join(tmp, "p", "calc"))
			return filepath.Join(tmp, "p", FileName)
		},
	}, {
		name: "plugin dir itself reached through a symlink",
		bin:  "calc",
		setup: func(t *testing.T, tmp string) string {
			writeFile(t, filepath.Join(tmp, "p", "build", "calc"), "#!/bin/sh\n")
			symlink(t, "build/calc", filepath.Join(tmp, "p", "calc"))
			symlink(t, "p", filepath.Join(tmp, "link"))
			return filepath.Join(tmp, "link", FileName)
		},
	}, {
		name: "dangling symlink",
		bin:  "calc",
		setup: func(t *testing.T, tmp string) string {
			mkdirs(t, filepath.Join(tmp, "p"))
			symlink(t, "../nowhere/calc", filepath.Join(tmp, "p", "calc"))
			return filepath.Join(tmp, "p", FileName)
		},
	}, {
		name: "binary symlinked outside",
		bin:  "calc",
		setup: func(t *testing.T, tmp string) string {
			writeFile(t, filepath.Join(tmp, "outside", "calc"), "#!/bin/sh\n")
			mkdirs(t, filepath.Join(tmp, "p"))
			symlink(t, "../outside/calc", filepath.Join(tmp, "p", "calc"))
			return filepath.Join(tmp, "p", FileName)
		},
		want: `$TMP/p/nexus.toml:6:10: plugin.binary "calc" resolves outside the plugin directory, to $TMP/outside/calc, ` +
			`through the symlink calc: put the binary itself inside the plugin directory` + "\n",
	}, {
		name: "parent directory symlinked outside",
		bin:  "bin/calc",
		setup: func(t *testing.T, tmp string) string {
			writeFile(t, filepath.Join(tmp, "outside", "calc"), "#!/bin/sh\n")
			mkdirs(t, filepath.Join(tmp, "p"))
			symlink(t, filepath.Join(tmp, "outside"), filepath.Join(tmp, "p", "bin"))
			return filepath.Join(tmp, "p", FileName)
		},
		want: `$TMP/p/nexus.toml:6:10: plugin.binary "bin/calc" resolves outside the plugin directory, to $TMP/outside, ` +
			`through the symlink bin: put the binary itself inside the plugin directory` + "\n",
	}, {
		name: "sibling with the plugin dir as prefix",
		bin:  "calc",
		setup: func(t *testing.T, tmp string) string {
			writeFile(t, filepath.Join(tmp, "p2", "calc"), "#!/bin/sh\n")
			mkdirs(t, filepath.Join(tmp, "p"))
			symlink(t, "../p2/calc", filepath.Join(tmp, "p", "calc"))
			return filepath.Join(tmp, "p", FileName)
		},
		want: `$TMP/p/nexus.toml:6:10: plugin.binary "calc" resolves outside the plugin directory, to $TMP/p2/calc, ` +
			`through the symlink calc: put the binary itself inside the plugin directory` + "\n",
	}, {
		name:  "missing manifest",
		setup: func(t *testing.T, tmp string) string { return filepath.Join(tmp, "none", FileName) },
		want:  "$TMP/none/nexus.toml:1:1: cannot read the manifest: no such file or directory\n",
	}, {
		name: "manifest is a directory",
		setup: func(t *testing.T, tmp string) string {
			mkdirs(t, filepath.Join(tmp, "d", FileName))
			return filepath.Join(tmp, "d", FileName)
		},
		want: "$TMP/d/nexus.toml:1:1: not a regular file: a manifest must be a file\n",
	}, {
		name: "manifest is a FIFO",
		setup: func(t *testing.T, tmp string) string {
			path := filepath.Join(tmp, "f", FileName)
			mkdirs(t, filepath.Dir(path))
			if err := syscall.Mkfifo(path, 0o644); err != nil {
				t.Skip("no FIFOs here:", err)
			}
			return path
		},
		want: "$TMP/f/nexus.toml:1:1: not a regular file: a manifest must be a file\n",
	}, {
		name: "manifest over 1 MiB",
		setup: func(t *testing.T, tmp string) string {
			path := filepath.Join(tmp, "big", FileName)
			writeFile(t, path, manifestFor("big", "calc")+"#"+strings.Repeat("x", MaxSize))
			return path
		},
		want: "$TMP/big/nexus.toml:1:1: file is 1048757 bytes, over the 1 MiB limit: keep manifests small\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmp := t.TempDir()
			if tt.bin != "" {
				writeFile(t, filepath.Join(tmp, "p", FileName), manifestFor("calc", tt.bin))
			}
			path := tt.setup(t, tmp)
			m, ds := Load(path)
			checkDiagnostics(t, ds)
			got := strings.ReplaceAll(render(ds), tmp, "$TMP")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("diagnostics (-want +got):\n%s", diff)
			}
			if tt.want != "" {
				if m != nil {
					t.Error("Load returned a manifest despite errors")
				}
				return
			}
			if m.Path != path || m.Dir() != filepath.Dir(path) {
				t.Errorf("Path, Dir = %q, %q; want %q, %q", m.Path, m.Dir(), path, filepath.Dir(path))
			}
			if want := filepath.Join(filepath.Dir(path), tt.bin); m.BinaryPath() != want {
				t.Errorf("BinaryPath() = %q, want %q", m.BinaryPath(), want)
			}
		})
	}
}

func TestLoadRelativePath(t *testing.T) {
	// Not parallel: it changes the working directory.
	tmp := t.TempDir()
	writeFile(t, filepath.Join(tmp, "p", FileName), manifestFor("calc", "calc"))
	t.Chdir(tmp)
	m, ds := Load(filepath.Join("p", FileName))
	if len(ds) != 0 {
		t.Fatalf("unexpected diagnostics:\n%s", render(ds))
	}
	if want := filepath.Join(tmp, "p", "calc"); m.BinaryPath() != want {
		t.Errorf("BinaryPath() = %q, want absolute %q", m.BinaryPath(), want)
	}
}
