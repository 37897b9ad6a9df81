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

// recorder is a writeFunc that records every write, in order.
type recorder struct{ writes [][2]string }

func (r *recorder) write(_ context.Context, path, content string) error {
	r.writes = append(r.writes, [2]string{path, content})
	return nil
}

func TestSolveWritesFilesThenReference(t *testing.T) {
	inst := map[string]any{
		"exercise":       "x",
		"files":          map[string]any{"go.mod": "module x\n", "x.go": "package x // stub", "x_test.go": "package x // test"},
		"solution_files": []any{"x.go"},
		"reference":      map[string]any{"files": map[string]any{"x.go": "package x // solved"}},
	}
	var r recorder
	got, err := solve(context.Background(), inst, r.write)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"files": []string{"go.mod", "x.go", "x_test.go"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("solve output (-want +got):\n%s", diff)
	}
	wantWrites := [][2]string{{"go.mod", "module x\n"}, {"x.go", "package x // stub"}, {"x_test.go", "package x // test"}, {"x.go", "package x // solved"}}
	if diff := cmp.Diff(wantWrites, r.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

func TestSolveStopsAtAWriteError(t *testing.T) {
	inst := map[string]any{"reference": map[string]any{"files": map[string]any{"a.go": "x"}}}
	boom := errors.New("boom")
	_, err := solve(context.Background(), inst, func(context.Context, string, string) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("solve error = %v, want one wrapping %v", err, boom)
	}
}

func TestAnswerWithFilesNeedsHostServices(t *testing.T) {
	inst := map[string]any{"reference": map[string]any{"files": map[string]any{"a.go": "x"}}}
	if _, err := answer(context.Background(), inst); !errors.Is(err, sdk.ErrNoHost) {
		t.Errorf("answer outside an execution: error = %v, want ErrNoHost", err)
	}
}

func TestReferenceThatIsNotFilesIsAnsweredVerbatim(t *testing.T) {
	// "files" that is not a map of strings is an ordinary answer.
	inst := map[string]any{"reference": map[string]any{"files": []any{"a.go"}}}
	got, err := solve(context.Background(), inst, func(context.Context, string, string) error {
		t.Error("wrote a file")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(inst["reference"], got); diff != "" {
		t.Errorf("solve (-want +got):\n%s", diff)
	}
}
