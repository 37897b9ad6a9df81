package manifest

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// MaxSchemaSize bounds one JSON Schema: the host compiles every schema and
// checks every call against it, so a huge one costs on each call.
const MaxSchemaSize = 256 << 10

// CheckSchemas compiles every component's input and output schema, as the
// host will when it validates calls. It is the deep check behind
// `nexus-host validate`; discovery only checks that schemas are JSON, to
// stay fast. Positions come from re-reading m.Path, so they are 1:1 when the
// manifest was not loaded from a file.
func CheckSchemas(m *Manifest) Diagnostics {
	var probs []problem
	for _, k := range Kinds {
		for i, c := range m.Components(k) {
			for _, s := range [...]struct{ field, text string }{
				{"input_schema", c.InputSchema},
				{"output_schema", c.OutputSchema},
			} {
				r := ref{kind: k, index: i, field: s.field, name: c.Name}
				if err := checkSchema(s.text); err != nil {
					probs = append(probs, problem{key: r.key(), msg: r.label() + " " + err.Error()})
				}
			}
		}
	}
	if len(probs) == 0 {
		return nil
	}
	data, _ := readManifest(m.Path) // on failure, positions fall back to 1:1
	ds := locate(m.Path, data, probs)
	ds.Sort()
	return ds
}

func checkSchema(text string) error {
	if len(text) > MaxSchemaSize {
		return fmt.Errorf("is %d bytes, over the 256 KiB limit: simplify the schema", len(text))
	}
	var s jsonschema.Schema
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %v", err)
	}
	if _, err := s.Resolve(nil); err != nil {
		return fmt.Errorf("is not a valid JSON Schema: %v", err)
	}
	return CheckRefCycles([]byte(text))
}
