package manifest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCheckSchemas(t *testing.T) {
	t.Parallel()
	big := `{"description": "` + strings.Repeat("x", MaxSchemaSize) + `"}`
	tests := []struct {
		name          string
		input, output string
		want          string // diagnostics, with the manifest path written $M
	}{{
		name:   "valid",
		input:  `{"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}}, "$defs": {"n": {"type": "number"}}}`,
		output: `true`,
	}, {
		name:   "wrong keyword type",
		input:  `{"type": 3}`,
		output: `{"required": "a"}`,
		want: `$M:11:16: input_schema of tool "add" is not a valid JSON Schema: invalid value for "type": "3"` + "\n" +
			`$M:12:17: output_schema of tool "add" is not a valid JSON Schema: ` +
			`json: cannot unmarshal string into Go struct field .schemaWithoutMethods.required of type []string` + "\n",
	}, {
		name:   "unresolvable reference and bad pattern",
		input:  `{"$ref": "#/$defs/missing"}`,
		output: `{"pattern": "("}`,
		want: `$M:11:16: input_schema of tool "add" is not a valid JSON Schema: JSON Pointer "/$defs/missing": no key "missing" in map` + "\n" +
			"$M:12:17: output_schema of tool \"add\" is not a valid JSON Schema: jsonschema.Schema: <anonymous schema>: " +
			"pattern: error parsing regexp: missing closing ): `(`" + "\n",
	}, {
		name:   "over 256 KiB",
		input:  big,
		output: `{}`,
		want:   `$M:11:16: input_schema of tool "add" is 262163 bytes, over the 256 KiB limit: simplify the schema` + "\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), FileName)
			text := strings.Replace(manifestFor("calc", "calc"), `'{"type": "object"}'`, "'"+tt.input+"'", 1)
			text = strings.Replace(text, `'{"type": "object"}'`, "'"+tt.output+"'", 1)
			writeFile(t, path, text)
			m, ds := Load(path)
			if ds.HasErrors() {
				t.Fatalf("Load:\n%s", render(ds))
			}
			ds = CheckSchemas(m)
			checkDiagnostics(t, ds)
			if diff := cmp.Diff(tt.want, strings.ReplaceAll(render(ds), path, "$M")); diff != "" {
				t.Errorf("CheckSchemas (-want +got):\n%s", diff)
			}
		})
	}
}

// A manifest built in memory has no file to take positions from.
func TestCheckSchemasInMemory(t *testing.T) {
	t.Parallel()
	m := &Manifest{Tasks: []Component{{Name: "t", InputSchema: `{"type": 3}`, OutputSchema: `{}`}}}
	want := `:1:1: input_schema of task "t" is not a valid JSON Schema: invalid value for "type": "3"` + "\n"
	if diff := cmp.Diff(want, render(CheckSchemas(m))); diff != "" {
		t.Errorf("CheckSchemas (-want +got):\n%s", diff)
	}
}
