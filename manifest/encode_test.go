package manifest

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// compactSchemas returns a copy of m with its JSON schemas compacted: Encode
// re-indents them, which is the one change a round trip may make.
func compactSchemas(m *Manifest) *Manifest {
	c := *m
	c.Path = ""
	for _, cs := range []*[]Component{&c.Agents, &c.Tools, &c.Tasks} {
		*cs = append([]Component(nil), *cs...)
		for i := range *cs {
			for _, s := range []*string{&(*cs)[i].InputSchema, &(*cs)[i].OutputSchema} {
				var b bytes.Buffer
				if json.Compact(&b, []byte(*s)) == nil {
					*s = b.String()
				}
			}
		}
	}
	return &c
}

// roundTrip checks that Parse reads back what Encode writes.
func roundTrip(t testing.TB, m *Manifest) []byte {
	t.Helper()
	data, err := Encode(m)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	back, ds := Parse("encoded.toml", data)
	if ds.HasErrors() {
		t.Fatalf("Parse(Encode(m)):\n%s\nencoded:\n%s", render(ds), data)
	}
	// Encode leaves out empty tags, so [] comes back as nil.
	if diff := cmp.Diff(compactSchemas(m), compactSchemas(back), cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Parse(Encode(m)) (-m +back):\n%s\nencoded:\n%s", diff, data)
	}
	again, err := Encode(back)
	if err != nil || !bytes.Equal(data, again) {
		t.Fatalf("Encode is not stable: %v\nfirst:\n%s\nsecond:\n%s", err, data, again)
	}
	return data
}

func TestEncodeGolden(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/valid.toml")
	if err != nil {
		t.Fatal(err)
	}
	m, ds := Parse("valid.toml", src)
	if len(ds) != 0 {
		t.Fatalf("Parse:\n%s", render(ds))
	}
	got := roundTrip(t, m)
	const golden = "testdata/valid.encoded.toml"
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("Encode (-want +got):\n%s", diff)
	}
}

func TestEncodeRoundTrip(t *testing.T) {
	t.Parallel()
	base := func() *Manifest {
		return &Manifest{
			Schema: 1,
			Plugin: Plugin{Name: "p", Version: "1", Binary: "p", Protocols: []int{1}},
			Tools: []Component{{Name: "t", Kind: ToolLocal, Task: TaskForbidden,
				InputSchema: `{"type":"object"}`, OutputSchema: `true`}},
		}
	}
	tests := []struct {
		name   string
		modify func(m *Manifest)
	}{
		{"minimal", func(m *Manifest) {}},
		{"escapes in strings", func(m *Manifest) {
			m.Plugin.Description = "say \"hi\"\\ now\nand\ttab \x01 \x7f héllo '''"
			m.Tools[0].Tags = []string{`a"b`, `c\d`, "", "é"}
		}},
		{"schema holding triple quotes", func(m *Manifest) {
			m.Tools[0].InputSchema = `{"description": "it'''s", "type": "object"}`
		}},
		{"schema holding a backslash", func(m *Manifest) {
			m.Tools[0].InputSchema = `{"pattern": "^\\d+$"}`
		}},
		{"schema with a trailing newline", func(m *Manifest) {
			m.Tools[0].InputSchema = "{\n\"a\": 1}\n"
		}},
		{"every kind", func(m *Manifest) {
			m.Agents = []Component{{Name: "a", Task: TaskOptional, InputSchema: `{}`, OutputSchema: `{}`}}
			m.Tasks = []Component{{Name: "k", Task: TaskRequired, InputSchema: `false`, OutputSchema: `{"type": "object", "properties": {"x": {}}}`}}
			m.Plugin.SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
			m.Plugin.Protocols = []int{1, 2, 3}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := base()
			tt.modify(m)
			roundTrip(t, m)
		})
	}
}

func TestEncodeInvalidUTF8(t *testing.T) {
	t.Parallel()
	m := &Manifest{Schema: 1, Plugin: Plugin{Name: "p", Description: "bad \xff"}}
	if _, err := Encode(m); err == nil {
		t.Error("Encode accepted invalid UTF-8")
	}
}
