// Command arith is a Nexus task plugin serving the task arith: n integer
// arithmetic problems (+ - * / and parentheses) generated deterministically
// from a seed. An answer scores 1 when it equals the reference exactly.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"

	"github.com/nexus-eval/nexus/sdk"
)

const (
	defaultN    = 10
	defaultSeed = 1
	maxN        = 10000
)

type args struct {
	N    int `json:"n,omitempty" jsonschema:"how many problems, 1 to 10000; 0 or absent means 10"`
	Seed int `json:"seed,omitempty" jsonschema:"the generator seed; 0 or absent means 1"`
}

type instance struct {
	Question   string    `json:"question"`
	Expression string    `json:"expression"`
	Reference  reference `json:"reference"`
}

type reference struct {
	Answer int64 `json:"answer"`
}

type output struct {
	Answer float64 `json:"answer" jsonschema:"the value of the expression"`
}

type details struct {
	Expected int64   `json:"expected"`
	Got      float64 `json:"got"`
}

type task struct{}

var _ sdk.TaskHandler[args, instance, output] = task{}

func (task) Instances(ctx context.Context, a args, yield func(string, instance) error) error {
	n, seed := a.N, a.Seed
	if n == 0 {
		n = defaultN
	}
	if seed == 0 {
		seed = defaultSeed
	}
	if n < 1 || n > maxN {
		return sdk.Errorf("invalid_argument", "n is %d: it must be between 1 and %d", n, maxN)
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6172697468)) // "arith"
	for i := range n {
		if err := ctx.Err(); err != nil {
			return err
		}
		e := generate(rng, 1+rng.IntN(4))
		inst := instance{
			Question:   "What is " + e.text + "?",
			Expression: e.text,
			Reference:  reference{Answer: e.value},
		}
		if err := yield(fmt.Sprintf("arith-%04d", i+1), inst); err != nil {
			return err
		}
	}
	return nil
}

func (task) Evaluate(_ context.Context, _ args, inst instance, out output) (sdk.Result, error) {
	d := details{Expected: inst.Reference.Answer, Got: out.Answer}
	if out.Answer == float64(inst.Reference.Answer) {
		return sdk.Result{Score: 1, Passed: true, Details: d}, nil
	}
	return sdk.Result{Score: 0, Details: d}, nil
}

// expr is a generated expression: its text, exact value and the precedence
// of its outermost operator (3 for a number).
type expr struct {
	text  string
	value int64
	prec  int
}

var precedence = map[byte]int{'+': 1, '-': 1, '*': 2, '/': 2}

// generate returns an expression with ops binary operators over the numbers
// 1..20. Division is used only when it is exact, so values stay integers
// (and small: at most 5 operands of at most 20 each).
func generate(rng *rand.Rand, ops int) expr {
	if ops == 0 {
		v := 1 + rng.Int64N(20)
		return expr{strconv.FormatInt(v, 10), v, 3}
	}
	leftOps := rng.IntN(ops)
	left := generate(rng, leftOps)
	op := "+-*/"[rng.IntN(4)]
	var right expr
	if op == '/' {
		// Divide by a number in 2..12 that divides the left value exactly.
		var divisors []int64
		for d := int64(2); d <= 12; d++ {
			if left.value%d == 0 {
				divisors = append(divisors, d)
			}
		}
		if len(divisors) == 0 {
			op = "+-*"[rng.IntN(3)]
		} else {
			d := divisors[rng.IntN(len(divisors))]
			right = expr{strconv.FormatInt(d, 10), d, 3}
		}
	}
	if op != '/' {
		right = generate(rng, ops-1-leftOps)
	}
	var v int64
	switch op {
	case '+':
		v = left.value + right.value
	case '-':
		v = left.value - right.value
	case '*':
		v = left.value * right.value
	case '/':
		v = left.value / right.value
	}
	p := precedence[op]
	lt, rt := left.text, right.text
	if left.prec < p {
		lt = "(" + lt + ")"
	}
	// Operators are left-associative: a right operand of equal precedence
	// needs parentheses after - and / (a - (b + c), a / (b * c)).
	if right.prec < p || right.prec == p && (op == '-' || op == '/') {
		rt = "(" + rt + ")"
	}
	return expr{lt + " " + string(op) + " " + rt, v, p}
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "arith", Version: "0.1.0", Description: "Integer arithmetic problems generated from a seed"},
		sdk.Task[args, instance, output]("arith", "Integer arithmetic problems (+ - * / and parentheses) generated deterministically from a seed; scored by exact match", task{}, sdk.WithTags("math")),
	)
}
