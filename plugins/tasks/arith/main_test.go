package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/plugins/tools/math/calc"
	"github.com/nexus-eval/nexus/sdk"
)

// collect returns the ids and instances the task yields for a.
func collect(t *testing.T, a args) ([]string, []instance) {
	t.Helper()
	var ids []string
	var insts []instance
	err := task{}.Instances(context.Background(), a, func(id string, inst instance) error {
		ids = append(ids, id)
		insts = append(insts, inst)
		return nil
	})
	if err != nil {
		t.Fatalf("Instances(%+v): %v", a, err)
	}
	return ids, insts
}

func TestInstancesDefaults(t *testing.T) {
	ids, _ := collect(t, args{})
	want := []string{"arith-0001", "arith-0002", "arith-0003", "arith-0004", "arith-0005",
		"arith-0006", "arith-0007", "arith-0008", "arith-0009", "arith-0010"}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	_, seed1 := collect(t, args{N: 10, Seed: 1})
	_, dflt := collect(t, args{})
	if diff := cmp.Diff(seed1, dflt); diff != "" {
		t.Errorf("default args differ from n=10 seed=1 (-want +got):\n%s", diff)
	}
}

func TestInstancesDeterministic(t *testing.T) {
	_, a := collect(t, args{N: 50, Seed: 42})
	_, b := collect(t, args{N: 50, Seed: 42})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same seed, different instances (-first +second):\n%s", diff)
	}
	_, c := collect(t, args{N: 50, Seed: 43})
	if cmp.Equal(a, c) {
		t.Errorf("seeds 42 and 43 gave the same instances")
	}
}

func TestAnswersMatchCalculator(t *testing.T) {
	ids, insts := collect(t, args{N: maxN, Seed: 7})
	ops := map[string]int{}
	for i, inst := range insts {
		v, err := calc.Eval(inst.Expression)
		if err != nil {
			t.Fatalf("%s: calc.Eval(%q): %v", ids[i], inst.Expression, err)
		}
		if v != float64(inst.Reference.Answer) {
			t.Errorf("%s: %q = %v by calc, reference says %d", ids[i], inst.Expression, v, inst.Reference.Answer)
		}
		if want := "What is " + inst.Expression + "?"; inst.Question != want {
			t.Errorf("%s: question %q, want %q", ids[i], inst.Question, want)
		}
		for _, op := range []string{" + ", " - ", " * ", " / ", "("} {
			ops[op] += strings.Count(inst.Expression, op)
		}
	}
	for op, n := range ops {
		if n == 0 {
			t.Errorf("no instance uses %q", op)
		}
	}
}

func TestJSONContract(t *testing.T) {
	inst := instance{Question: "What is (3 + 4) * 2?", Expression: "(3 + 4) * 2", Reference: reference{Answer: 14}}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{inst, `{"question":"What is (3 + 4) * 2?","expression":"(3 + 4) * 2","reference":{"answer":14}}`},
		{output{Answer: 14}, `{"answer":14}`},
		{details{Expected: 14, Got: 15}, `{"expected":14,"got":15}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(b)); diff != "" {
			t.Errorf("JSON of %T (-want +got):\n%s", tt.v, diff)
		}
	}
}

func TestInstancesInvalidN(t *testing.T) {
	for _, n := range []int{-1, maxN + 1} {
		err := task{}.Instances(context.Background(), args{N: n}, func(string, instance) error { return nil })
		e, ok := errors.AsType[*sdk.Error](err)
		if !ok || e.Code != "invalid_argument" {
			t.Errorf("n=%d: error = %v, want code invalid_argument", n, err)
		}
	}
}

func TestInstancesStopsWhenYieldFails(t *testing.T) {
	stop := errors.New("stop")
	calls := 0
	err := task{}.Instances(context.Background(), args{N: 100}, func(string, instance) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("err = %v after %d calls, want %v after 1", err, calls, stop)
	}
}

func TestEvaluate(t *testing.T) {
	inst := instance{Question: "What is (3 + 4) * 2?", Expression: "(3 + 4) * 2", Reference: reference{Answer: 14}}
	tests := []struct {
		name string
		got  float64
		want sdk.Result
	}{
		{"correct", 14, sdk.Result{Score: 1, Passed: true, Details: details{Expected: 14, Got: 14}}},
		{"wrong", 15, sdk.Result{Score: 0, Details: details{Expected: 14, Got: 15}}},
		{"close is not equal", 14.000001, sdk.Result{Score: 0, Details: details{Expected: 14, Got: 14.000001}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := task{}.Evaluate(context.Background(), args{}, inst, output{Answer: tt.got})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, res); diff != "" {
				t.Errorf("Evaluate (-want +got):\n%s", diff)
			}
		})
	}
}
