package main

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/sdk"
)

func TestNothing(t *testing.T) {
	tests := []struct {
		name       string
		inst       map[string]any
		wantWrites [][2]string
	}{
		{"no files", map[string]any{"question": "What is 2 + 2?", "reference": map[string]any{"answer": 4}}, nil},
		{"empty instance", nil, nil},
		{"files in path order", map[string]any{
			"files":     map[string]any{"x_test.go": "test", "go.mod": "module x\n", "x.go": "stub"},
			"reference": map[string]any{"files": map[string]any{"x.go": "solved"}},
		}, [][2]string{{"go.mod", "module x\n"}, {"x.go", "stub"}, {"x_test.go", "test"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var writes [][2]string
			got, err := nothing(context.Background(), tt.inst, func(_ context.Context, p, c string) error {
				writes = append(writes, [2]string{p, c})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{}, got); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWrites, writes); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNothingRejectsNonStringFiles(t *testing.T) {
	_, err := nothing(context.Background(), map[string]any{"files": map[string]any{"a.go": 1.0}}, func(context.Context, string, string) error { return nil })
	if e, ok := errors.AsType[*sdk.Error](err); !ok || e.Code != sdk.CodeInvalidInput {
		t.Errorf("error = %v, want an invalid_input *sdk.Error", err)
	}
}

func TestAnswerWithFilesNeedsHostServices(t *testing.T) {
	if _, err := answer(context.Background(), map[string]any{"files": map[string]any{"a.go": "x"}}); !errors.Is(err, sdk.ErrNoHost) {
		t.Errorf("error = %v, want ErrNoHost", err)
	}
}
