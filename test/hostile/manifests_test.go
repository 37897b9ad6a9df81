package hostile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nexus-eval/nexus/manifest"
)

// validManifest is a well-formed manifest for plugin name; edit adjusts
// the text before it is written.
func validManifest(name string) string {
	return fmt.Sprintf(`schema = 1

[plugin]
name = %[1]q
version = "0.1.0"
binary = %[1]q
protocols = [1]

[[tool]]
name = "t"
input_schema = '{"type": "object"}'
output_schema = '{"type": "object"}'
`, name)
}

func write(t *testing.T, path string, data []byte, perm os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, perm); err != nil {
		t.Fatal(err)
	}
}

// TestHostileManifests lays out one plugin directory per hostile manifest
// next to a good plugin, discovers them with the real host, and checks
// that each is refused with a positioned diagnostic that says what is
// wrong, that the good plugin is still discovered and nothing started, and
// that discovery kept its memory bounded.
func TestHostileManifests(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	write(t, filepath.Join(outside, "evil"), []byte("#!/bin/sh\necho pwned\n"), 0o755)

	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "1" + strings.Repeat(close, n)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		// want: substrings of the diagnostic of dir's manifest, which
		// must also name a line and column.
		want []string
	}{
		{
			name: "binary escapes with ..",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(strings.Replace(validManifest("dotdot"), `binary = "dotdot"`, `binary = "../../evil"`, 1)), 0o644)
			},
			want: []string{":6:", `plugin.binary "../../evil" escapes the plugin directory`},
		},
		{
			name: "absolute binary",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(strings.Replace(validManifest("absolute"), `binary = "absolute"`, `binary = "/bin/sh"`, 1)), 0o644)
			},
			want: []string{":6:", "is absolute"},
		},
		{
			name: "binary symlinked outside",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(validManifest("symbin")), 0o644)
				if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(dir, "symbin")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{":6:", "resolves outside the plugin directory", "through the symlink symbin"},
		},
		{
			name: "directory on the binary's path symlinked outside",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(strings.Replace(validManifest("symdir"), `binary = "symdir"`, `binary = "bin/evil"`, 1)), 0o644)
				if err := os.Symlink(outside, filepath.Join(dir, "bin")); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{":6:", "resolves outside the plugin directory", "through the symlink bin"},
		},
		{
			name: "manifest is a symlink to /dev/zero",
			setup: func(t *testing.T, dir string) {
				os.MkdirAll(dir, 0o755)
				if err := os.Symlink("/dev/zero", filepath.Join(dir, manifest.FileName)); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{":1:1:", "not a regular file"},
		},
		{
			name: "manifest is a fifo nobody writes",
			setup: func(t *testing.T, dir string) {
				os.MkdirAll(dir, 0o755)
				if err := syscall.Mkfifo(filepath.Join(dir, manifest.FileName), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{":1:1:", "not a regular file"},
		},
		{
			name: "10 GiB sparse manifest",
			setup: func(t *testing.T, dir string) {
				path := filepath.Join(dir, manifest.FileName)
				write(t, path, []byte(validManifest("huge")), 0o644)
				if err := os.Truncate(path, 10<<30); err != nil {
					t.Fatal(err)
				}
			},
			want: []string{":1:1:", "over the 1 MiB limit"},
		},
		{
			name: "manifest just over 1 MiB",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(validManifest("big")+"#"+strings.Repeat("x", manifest.MaxSize)), 0o644)
			},
			want: []string{":1:1:", "over the 1 MiB limit"},
		},
		{
			name: "arrays nested 100,000 deep",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(validManifest("deeparr")+"x = "+deep("[", "]", 100000)+"\n"), 0o644)
			},
			want: []string{"invalid TOML", "nested more than the maximum"},
		},
		{
			name: "inline tables nested 100,000 deep",
			setup: func(t *testing.T, dir string) {
				write(t, filepath.Join(dir, manifest.FileName), []byte(validManifest("deeptab")+"x = "+deep("{a=", "}", 100000)+"\n"), 0o644)
			},
			want: []string{"invalid TOML", "nested more than the maximum"},
		},
		{
			name: "JSON schema nested 50,000 deep",
			setup: func(t *testing.T, dir string) {
				m := strings.Replace(validManifest("deepjson"), `input_schema = '{"type": "object"}'`, `input_schema = '{"items": `+deep("[", "]", 50000)+`}'`, 1)
				write(t, filepath.Join(dir, manifest.FileName), []byte(m), 0o644)
			},
			want: []string{"input_schema", "JSON"},
		},
		{
			name: "invalid UTF-8",
			setup: func(t *testing.T, dir string) {
				m := strings.Replace(validManifest("utf"), `version = "0.1.0"`, "version = \"0.1.0\"\ndescription = \"caf\xe9 \xff\"", 1)
				write(t, filepath.Join(dir, manifest.FileName), []byte(m), 0o644)
			},
			want: []string{":6:", "not valid UTF-8"},
		},
		{
			name: "NUL and control bytes",
			setup: func(t *testing.T, dir string) {
				m := strings.Replace(validManifest("nul"), `version = "0.1.0"`, "version = \"0.1.0\x00\x1b[2J\"", 1)
				write(t, filepath.Join(dir, manifest.FileName), []byte(m), 0o644)
			},
			want: []string{":5:", "invalid TOML"},
		},
	}

	// The good plugin, which must survive its neighbours.
	write(t, filepath.Join(root, "good", manifest.FileName), []byte(validManifest("good")), 0o644)
	for i, c := range cases {
		c.setup(t, filepath.Join(root, fmt.Sprintf("case%02d", i)))
	}

	before := heapInUse()
	h, diags := newHost(t, root)
	for _, d := range diags {
		t.Logf("diagnostic: %s", short(d.String()))
	}
	for i, c := range cases {
		path := filepath.Join(root, fmt.Sprintf("case%02d", i), manifest.FileName)
		var got []string
		for _, d := range diags {
			if d.Path == path {
				got = append(got, d.String())
			}
		}
		if len(got) == 0 {
			t.Errorf("%s: no diagnostic for %s", c.name, path)
			continue
		}
		all := strings.Join(got, "\n")
		for _, w := range c.want {
			if !strings.Contains(all, w) {
				t.Errorf("%s: diagnostics do not mention %q:\n%s", c.name, w, short(all))
			}
		}
		if len(all) > 4096 {
			t.Errorf("%s: diagnostics are %d bytes long, want a short message", c.name, len(all))
		}
	}
	var plugins []string
	for _, m := range h.Manifests() {
		plugins = append(plugins, m.Plugin.Name)
	}
	if strings.Join(plugins, ",") != "good" {
		t.Errorf("discovered plugins %v, want only good", plugins)
	}
	if n := h.Running(); n != 0 {
		t.Errorf("%d plugin processes started by discovery", n)
	}
	assertHeapGrowth(t, before, 64<<20)
}

// TestHugeButValidManifests: manifests at the size limit, with one
// enormous schema or ten thousand tools, are accepted (they are valid) and
// cost bounded memory; the deep check refuses the schema over its limit.
func TestHugeButValidManifests(t *testing.T) {
	t.Parallel()
	root := t.TempDir()

	// One input schema of ~900 KiB: valid JSON, over MaxSchemaSize.
	var props bytes.Buffer
	for i := 0; props.Len() < 900<<10; i++ {
		if i > 0 {
			props.WriteString(",")
		}
		fmt.Fprintf(&props, `"p%06d":{"type":"string","description":"property number %d"}`, i, i)
	}
	big := strings.Replace(validManifest("bigschema"), `input_schema = '{"type": "object"}'`,
		`input_schema = '{"type":"object","properties":{`+props.String()+`}}'`, 1)
	write(t, filepath.Join(root, "bigschema", manifest.FileName), []byte(big), 0o644)

	// Ten thousand tools.
	var many strings.Builder
	many.WriteString(strings.SplitN(validManifest("manytools"), "[[tool]]", 2)[0])
	for i := range 10000 {
		fmt.Fprintf(&many, "[[tool]]\nname = \"t%05d\"\ninput_schema = '{}'\noutput_schema = '{}'\n", i)
	}
	if many.Len() > manifest.MaxSize {
		t.Fatalf("test manifest is %d bytes, over the limit", many.Len())
	}
	write(t, filepath.Join(root, "manytools", manifest.FileName), []byte(many.String()), 0o644)

	before := heapInUse()
	h, diags := newHost(t, root)
	if diags.HasErrors() {
		t.Fatalf("valid manifests refused: %v", short(diags.Err().Error()))
	}
	if n := len(h.Tools.List()); n != 10001 {
		t.Errorf("%d tools listed, want 10001", n)
	}
	assertHeapGrowth(t, before, 96<<20)

	// The deep check (nexus-host validate) refuses the oversized schema.
	for _, m := range h.Manifests() {
		ds := manifest.CheckSchemas(m)
		switch m.Plugin.Name {
		case "bigschema":
			if len(ds) != 1 || !strings.Contains(ds[0].String(), "over the 256 KiB limit") {
				t.Errorf("CheckSchemas(bigschema) = %v, want the size limit", ds)
			}
		case "manytools":
			if len(ds) != 0 {
				t.Errorf("CheckSchemas(manytools) = %v, want nothing", ds)
			}
		}
	}
}
