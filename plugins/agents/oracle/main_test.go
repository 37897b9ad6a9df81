package main

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/sdk"
)

func TestAnswer(t *testing.T) {
	tests := []struct {
		name     string
		instance string
		want     string // JSON
	}{
		{"object", `{"question": "What is 2 + 2?", "reference": {"answer": 4}}`, `{"answer":4}`},
		{"string", `{"reference": "Paris"}`, `"Paris"`},
		{"null", `{"reference": null}`, `null`},
		{"nested", `{"reference": {"steps": [1, 2, {"x": true}], "answer": -1.5}}`, `{"answer":-1.5,"steps":[1,2,{"x":true}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inst map[string]any
			if err := json.Unmarshal([]byte(tt.instance), &inst); err != nil {
				t.Fatal(err)
			}
			got, err := answer(context.Background(), inst)
			if err != nil {
				t.Fatal(err)
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("answer(%s) (-want +got):\n%s", tt.instance, diff)
			}
		})
	}
}

func TestAnswerWithoutReference(t *testing.T) {
	for _, inst := range []map[string]any{nil, {}, {"question": "What is 2 + 2?"}} {
		_, err := answer(context.Background(), inst)
		want := &sdk.Error{Code: "invalid_input", Message: `instance has no "reference" field: the oracle agent only works on tasks whose instances carry their reference answer`}
		got, ok := errors.AsType[*sdk.Error](err)
		if !ok {
			t.Fatalf("answer(%v) error = %v, want %v", inst, err, want)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("answer(%v) error (-want +got):\n%s", inst, diff)
		}
	}
}
