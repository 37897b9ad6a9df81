package manifest

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// render formats diagnostics one per line, as golden files hold them.
func render(ds Diagnostics) string {
	var b strings.Builder
	for _, d := range ds {
		fmt.Fprintln(&b, d)
	}
	return b.String()
}

// TestDiagnosticsGolden parses each testdata/diag/*.toml and compares the
// diagnostics with the matching .golden file (go test -update rewrites them).
func TestDiagnosticsGolden(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("testdata/diag/*.toml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden cases: %v", err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".toml")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			m, ds := Parse(filepath.Base(file), data)
			checkDiagnostics(t, ds)
			if (m == nil) != ds.HasErrors() {
				t.Errorf("manifest is nil: %v, but HasErrors: %v", m == nil, ds.HasErrors())
			}
			got := render(ds)
			golden := strings.TrimSuffix(file, ".toml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("diagnostics differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// checkDiagnostics asserts what holds for every diagnostic: a real position
// and a message.
func checkDiagnostics(t testing.TB, ds Diagnostics) {
	t.Helper()
	for _, d := range ds {
		if d.Line < 1 || d.Col < 1 || d.Message == "" {
			t.Errorf("bad diagnostic %#v", d)
		}
	}
}

func TestParseValid(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	m, ds := Parse("valid.toml", data)
	if len(ds) != 0 {
		t.Fatalf("unexpected diagnostics:\n%s", render(ds))
	}
	want := &Manifest{
		Schema: 1,
		Plugin: Plugin{
			Name:        "calc",
			Version:     "1.4.2",
			Description: "Arithmetic tools for agents.",
			Binary:      "bin/calc",
			Protocols:   []int{1, 2},
			SHA256:      "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		},
		Agents: []Component{{
			Name:         "solver",
			Description:  "Solves arithmetic word problems.",
			Tags:         []string{"math", "demo"},
			Task:         TaskOptional,
			InputSchema:  `{"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}` + "\n",
			OutputSchema: `{"type": "object"}`,
		}},
		Tools: []Component{{
			Name:        "add",
			Description: "Adds two numbers.",
			InputSchema: `{
  "type": "object",
  "properties": {
    "a": {"type": "number"},
    "b": {"type": "number"}
  },
  "required": ["a", "b"]
}`,
			OutputSchema: "true",
			Kind:         ToolLocal,
			Task:         TaskForbidden,
		}, {
			Name:         "sqrt",
			InputSchema:  `{"type": "object", "properties": {"x": {"type": "number", "minimum": 0}}}`,
			OutputSchema: `{"type": "number"}`,
			Kind:         ToolRuntime,
			Task:         TaskRequired,
		}},
		Tasks: []Component{{
			Name:         "gsm8k",
			InputSchema:  `{"type": "object", "properties": {"split": {"enum": ["train", "test"]}}}`,
			OutputSchema: `{"type": "object", "properties": {"answer": {"type": "number"}}}`,
			Task:         TaskForbidden,
		}},
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
}

// TestParseGenerated covers inputs too big or too deep to keep in testdata.
func TestParseGenerated(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		data []byte
		want string
	}{{
		name: "over 1 MiB",
		data: append([]byte("schema = 1\n# "), bytes.Repeat([]byte("x"), MaxSize)...),
		want: "big.toml:1:1: file is 1048589 bytes, over the 1 MiB limit: keep manifests small\n",
	}, {
		name: "inline tables nested past the parser's limit",
		data: []byte("x = " + strings.Repeat("{a = ", 20000) + "1" + strings.Repeat("}", 20000)),
		want: "big.toml:1:50005: invalid TOML: arrays and inline tables are nested more than the maximum of 10000 levels deep\n",
	}, {
		name: "arrays nested past the parser's limit",
		data: []byte("x = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000)),
		want: "big.toml:1:10005: invalid TOML: arrays and inline tables are nested more than the maximum of 10000 levels deep\n",
	}, {
		name: "many unknown keys",
		data: []byte(strings.Repeat("[[x]]\ny = 1\n", 3) + "[[tool]]\n"),
		want: "big.toml:1:1: schema is missing: add schema = 1 at the top of the file\n" +
			"big.toml:1:1: plugin.name is missing: add it, e.g. name = \"my-plugin\"\n" +
			"big.toml:1:1: plugin.version is missing: add it, e.g. version = \"1.0.0\"\n" +
			"big.toml:1:1: plugin.binary is missing: add it, e.g. binary = \"my-plugin\"\n" +
			"big.toml:1:1: plugin.protocols is missing: add it, e.g. protocols = [1]\n" +
			"big.toml:1:3: unknown key \"x\": remove it or check its spelling\n" +
			"big.toml:3:3: unknown key \"x\": remove it or check its spelling\n" +
			"big.toml:5:3: unknown key \"x\": remove it or check its spelling\n" +
			"big.toml:7:1: tool name is missing: add it, e.g. name = \"my-tool\"\n" +
			"big.toml:7:1: input_schema of tool #1 is missing: add it, e.g. input_schema = '{\"type\": \"object\"}'\n" +
			"big.toml:7:1: output_schema of tool #1 is missing: add it, e.g. output_schema = '{\"type\": \"object\"}'\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, ds := Parse("big.toml", tt.data)
			checkDiagnostics(t, ds)
			if m != nil {
				t.Errorf("Parse returned a manifest for a broken file")
			}
			if diff := cmp.Diff(tt.want, render(ds)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}
