package main

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/sdk"
)

func TestCalculate(t *testing.T) {
	tests := []struct {
		name    string
		expr    string
		want    calcOut
		wantErr *sdk.Error
	}{
		{"value", "(3 + 4) * 2", calcOut{Value: 14}, nil},
		{"syntax error", "(1 +)", calcOut{}, &sdk.Error{Code: "invalid_input", Message: `unexpected ")" at offset 4: expected a number or "("`}},
		{"division by zero", "1/0", calcOut{}, &sdk.Error{Code: "division_by_zero", Message: "division by zero at offset 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := calculate(context.Background(), calcIn{Expression: tt.expr})
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("calculate(%q) (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func TestStats(t *testing.T) {
	tests := []struct {
		name    string
		values  []float64
		want    statsOut
		wantErr *sdk.Error
	}{
		{"one", []float64{7}, statsOut{Count: 1, Sum: 7, Mean: 7, Min: 7, Max: 7}, nil},
		{"several", []float64{3, -1, 4, 1.5, 5}, statsOut{Count: 5, Sum: 12.5, Mean: 2.5, Min: -1, Max: 5}, nil},
		{"empty", nil, statsOut{}, &sdk.Error{Code: "invalid_input", Message: "values is empty: give at least one number"}},
		{"overflow", []float64{1e308, 1e308}, statsOut{}, &sdk.Error{Code: "invalid_input", Message: "the sum of the values overflows a float64"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stats(context.Background(), statsIn{Values: tt.values})
			checkErr(t, err, tt.wantErr)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("stats(%v) (-want +got):\n%s", tt.values, diff)
			}
		})
	}
}

func checkErr(t *testing.T, err error, want *sdk.Error) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	got, ok := errors.AsType[*sdk.Error](err)
	if !ok {
		t.Fatalf("error = %v, want *sdk.Error %v", err, want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
