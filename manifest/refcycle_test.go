package manifest

import (
	"strings"
	"testing"
)

func TestCheckRefCycles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		schema string
		cycle  bool
	}{
		{"plain", `{"type":"object","properties":{"a":{"type":"string"}}}`, false},
		{"self", `{"$ref":"#"}`, true},
		{"pair", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`, true},
		{"through allOf", `{"allOf":[{"$ref":"#"}]}`, true},
		{"through not", `{"not":{"anyOf":[{"$ref":"#"}]}}`, true},
		{"tree through properties", `{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`, false},
		{"tree through defs", `{"$defs":{"node":{"properties":{"next":{"$ref":"#/$defs/node"}}}},"$ref":"#/$defs/node"}`, false},
		{"remote ref ignored", `{"$ref":"https://example.com/s.json"}`, false},
		{"boolean schema", `true`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := CheckRefCycles([]byte(tt.schema))
			if got := err != nil; got != tt.cycle {
				t.Fatalf("CheckRefCycles(%s) = %v, want cycle=%v", tt.schema, err, tt.cycle)
			}
			if tt.cycle && !strings.Contains(err.Error(), "reference cycle") {
				t.Errorf("error %q does not name the cycle", err)
			}
		})
	}
}
