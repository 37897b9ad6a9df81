package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultRoots(t *testing.T) {
	t.Parallel()
	defaults := []Root{
		{Dir: "/w/plugins/agents"},
		{Dir: "/w/plugins/tools"},
		{Dir: "/w/plugins/tasks"},
	}
	tests := []struct {
		name, pluginPath string
		want             []Root
	}{
		{"no plugin path", "", defaults},
		{"plugin path", "/a:/b/c", append(defaults[:3:3], Root{"/a", true}, Root{"/b/c", true})},
		{"empty entries skipped", ":/a::", append(defaults[:3:3], Root{"/a", true})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, DefaultRoots("/w", tt.pluginPath)); diff != "" {
				t.Errorf("DefaultRoots (-want +got):\n%s", diff)
			}
		})
	}
}

// scanTree builds:
//
//	plugins/tools/calc/        valid
//	plugins/tools/broken/      manifest with an error
//	plugins/tools/empty/       no manifest: not a plugin
//	plugins/tools/README.md    a file: ignored
//	plugins/tools/echo ->      symlink to elsewhere/echo, valid
//	plugins/tasks/bench/       valid
//	solo/                      a plugin dir used directly as a root
func scanTree(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	tools := filepath.Join(tmp, "plugins", "tools")
	writeFile(t, filepath.Join(tools, "calc", FileName), manifestFor("calc", "calc"))
	writeFile(t, filepath.Join(tools, "broken", FileName), strings.Replace(manifestFor("broken", "x"), "schema = 1", "schema = 7", 1))
	mkdirs(t, filepath.Join(tools, "empty"))
	writeFile(t, filepath.Join(tools, "README.md"), "not a plugin")
	writeFile(t, filepath.Join(tmp, "elsewhere", "echo", FileName), manifestFor("echo", "echo"))
	symlink(t, filepath.Join(tmp, "elsewhere", "echo"), filepath.Join(tools, "echo"))
	writeFile(t, filepath.Join(tmp, "plugins", "tasks", "bench", FileName), manifestFor("bench", "bench"))
	writeFile(t, filepath.Join(tmp, "solo", FileName), manifestFor("solo", "solo"))
	return tmp
}

func TestScan(t *testing.T) {
	t.Parallel()
	const brokenDiag = "$TMP/plugins/tools/broken/nexus.toml:1:10: schema = 7 is newer than this host reads (schema 1): upgrade nexus-host\n"
	tests := []struct {
		name  string
		roots func(tmp string) []Root
		want  []string // manifest paths relative to the tree
		diags string   // with the tree written $TMP
	}{{
		name:  "default roots, agents missing",
		roots: func(tmp string) []Root { return DefaultRoots(tmp, "") },
		want: []string{
			"plugins/tasks/bench/nexus.toml",
			"plugins/tools/calc/nexus.toml",
			"plugins/tools/echo/nexus.toml",
		},
		diags: brokenDiag,
	}, {
		name: "missing explicit root",
		roots: func(tmp string) []Root {
			return []Root{{Dir: filepath.Join(tmp, "nope"), Explicit: true}, {Dir: filepath.Join(tmp, "solo"), Explicit: true}}
		},
		want:  []string{"solo/nexus.toml"},
		diags: "$TMP/nope:1:1: cannot read plugin root: no such file or directory: fix $NEXUS_PLUGIN_PATH or --plugins\n",
	}, {
		name: "root is a file",
		roots: func(tmp string) []Root {
			return []Root{{Dir: filepath.Join(tmp, "plugins", "tools", "README.md")}}
		},
		diags: "$TMP/plugins/tools/README.md:1:1: cannot read plugin root: not a directory: fix $NEXUS_PLUGIN_PATH or --plugins\n",
	}, {
		name: "duplicate and overlapping roots load each plugin once",
		roots: func(tmp string) []Root {
			tools := filepath.Join(tmp, "plugins", "tools")
			return []Root{
				{Dir: tools},
				{Dir: tools + "/", Explicit: true},
				{Dir: filepath.Join(tools, "..", "tools", "calc"), Explicit: true},
				{Dir: filepath.Join(tools, "calc"), Explicit: true},
			}
		},
		want:  []string{"plugins/tools/calc/nexus.toml", "plugins/tools/echo/nexus.toml"},
		diags: brokenDiag,
	}, {
		name: "nested roots: only immediate subdirectories are plugins",
		roots: func(tmp string) []Root {
			return []Root{{Dir: tmp, Explicit: true}, {Dir: filepath.Join(tmp, "plugins"), Explicit: true}}
		},
		want: []string{"solo/nexus.toml"},
	}, {
		name:  "no roots",
		roots: func(string) []Root { return nil },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tmp := scanTree(t)
			ms, ds := Scan(tt.roots(tmp))
			checkDiagnostics(t, ds)
			if diff := cmp.Diff(tt.diags, strings.ReplaceAll(render(ds), tmp, "$TMP")); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			var got []string
			for _, m := range ms {
				rel, err := filepath.Rel(tmp, m.Path)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, filepath.ToSlash(rel))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("manifests (-want +got):\n%s", diff)
			}
		})
	}
}

// Scanning many plugins in parallel gives the same result every time.
func TestScanDeterministic(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBenchTree(t, dir, 200)
	// Break a few, so diagnostics are ordered too.
	for _, i := range []string{"00007", "00100", "00150"} {
		if err := os.WriteFile(filepath.Join(dir, "calc-"+i, FileName), []byte("schema = 1\n[plugin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	roots := []Root{{Dir: dir}}
	first, firstDs := Scan(roots)
	if len(first) != 197 || len(firstDs) != 3 {
		t.Fatalf("Scan: %d manifests, %d diagnostics; want 197, 3", len(first), len(firstDs))
	}
	for range 5 {
		ms, ds := Scan(roots)
		if diff := cmp.Diff(first, ms); diff != "" {
			t.Fatalf("manifests differ between scans:\n%s", diff)
		}
		if diff := cmp.Diff(firstDs, ds); diff != "" {
			t.Fatalf("diagnostics differ between scans:\n%s", diff)
		}
	}
}
