// Command math is a Nexus tool plugin serving two tools: calculator, which
// evaluates an arithmetic expression (see package calc for the grammar), and
// stats, which summarises a list of numbers.
package main

import (
	"context"
	"errors"
	"math"

	"github.com/nexus-eval/nexus/plugins/tools/math/calc"
	"github.com/nexus-eval/nexus/sdk"
)

type calcIn struct {
	Expression string `json:"expression" jsonschema:"an arithmetic expression: numbers, + - * / %, unary minus and parentheses, e.g. (3 + 4) * 2"`
}

type calcOut struct {
	Value float64 `json:"value" jsonschema:"the value of the expression"`
}

func calculate(_ context.Context, in calcIn) (calcOut, error) {
	v, err := calc.Eval(in.Expression)
	if ce, ok := errors.AsType[*calc.Error](err); ok {
		return calcOut{}, sdk.Errorf(ce.Code, "%s", ce.Msg)
	}
	return calcOut{Value: v}, err
}

type statsIn struct {
	Values []float64 `json:"values" jsonschema:"the numbers to summarise; at least one"`
}

type statsOut struct {
	Count int     `json:"count" jsonschema:"how many values there are"`
	Sum   float64 `json:"sum" jsonschema:"the sum of the values"`
	Mean  float64 `json:"mean" jsonschema:"the arithmetic mean of the values"`
	Min   float64 `json:"min" jsonschema:"the smallest value"`
	Max   float64 `json:"max" jsonschema:"the largest value"`
}

func stats(_ context.Context, in statsIn) (statsOut, error) {
	if len(in.Values) == 0 {
		return statsOut{}, sdk.Errorf(sdk.CodeInvalidInput, "values is empty: give at least one number")
	}
	out := statsOut{Count: len(in.Values), Min: in.Values[0], Max: in.Values[0]}
	for _, v := range in.Values {
		out.Sum += v
		out.Min, out.Max = min(out.Min, v), max(out.Max, v)
	}
	if math.IsInf(out.Sum, 0) {
		return statsOut{}, sdk.Errorf(sdk.CodeInvalidInput, "the sum of the values overflows a float64")
	}
	out.Mean = out.Sum / float64(out.Count)
	return out, nil
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "math", Version: "0.1.0", Description: "Arithmetic tools: an expression calculator and summary statistics"},
		sdk.Tool("calculator", "Evaluates an arithmetic expression with + - * / %, unary minus and parentheses", calculate, sdk.WithTags("math")),
		sdk.Tool("stats", "Summarises a list of numbers: count, sum, mean, min and max", stats, sdk.WithTags("math")),
	)
}
