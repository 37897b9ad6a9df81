package calc

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEval(t *testing.T) {
	tests := []struct {
		name string
		expr string
		want float64
	}{
		{"integer", "42", 42},
		{"decimal", "3.25", 3.25},
		{"leading dot", ".5", 0.5},
		{"trailing dot", "2.", 2},
		{"exponent", "1.5e3", 1500},
		{"negative exponent", "25E-2", 0.25},
		{"exponent with plus", "2e+2", 200},
		{"underflow is zero", "1e-400", 0},
		{"addition", "1 + 2", 3},
		{"precedence mul over add", "2 + 3 * 4", 14},
		{"precedence div over sub", "10 - 6 / 2", 7},
		{"precedence mod over add", "1 + 7 % 4", 4},
		{"left assoc sub", "10 - 4 - 3", 3},
		{"left assoc div", "100 / 10 / 5", 2},
		{"left assoc mixed", "2 * 6 / 3 * 2", 8},
		{"left assoc mod", "17 % 10 % 4", 3},
		{"parens override", "(2 + 3) * 4", 20},
		{"nested parens", "((1 + 2) * (3 + (4 - 1))) / 2", 9},
		{"redundant parens", "(((7)))", 7},
		{"unary minus", "-3", -3},
		{"unary plus", "+3", 3},
		{"double unary minus", "--3", 3},
		{"unary minus binds tighter than mul", "-2 * 3", -6},
		{"unary minus after operator", "5 - -2", 7},
		{"unary minus on parens", "-(2 + 3) * 2", -10},
		{"mixed signs", "-+-4", 4},
		{"fractional division", "1 / 4", 0.25},
		{"float remainder", "7.5 % 2", 1.5},
		{"negative remainder", "-7 % 3", -1},
		{"whitespace everywhere", " \t( 1\n+\r2 ) * 3 ", 9},
		{"no whitespace", "2*(3+4)-5", 9},
		{"max depth accepted", strings.Repeat("(", MaxDepth) + "1" + strings.Repeat(")", MaxDepth), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Eval(tt.expr)
			if err != nil {
				t.Fatalf("Eval(%q): %v", tt.expr, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Eval(%q) (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func TestEvalErrors(t *testing.T) {
	deep := strings.Repeat("(", MaxDepth+1) + "1" + strings.Repeat(")", MaxDepth+1)
	tests := []struct {
		name string
		expr string
		want *Error
	}{
		{"empty", "", &Error{CodeInvalidInput, 0, `unexpected end of input at offset 0: expected a number or "("`}},
		{"only spaces", "   ", &Error{CodeInvalidInput, 3, `unexpected end of input at offset 3: expected a number or "("`}},
		{"missing operand", "(1 +)", &Error{CodeInvalidInput, 4, `unexpected ")" at offset 4: expected a number or "("`}},
		{"trailing operator", "1 *", &Error{CodeInvalidInput, 3, `unexpected end of input at offset 3: expected a number or "("`}},
		{"unclosed paren", "(1 + 2", &Error{CodeInvalidInput, 6, `unexpected end of input at offset 6: expected an operator or ")" to close "(" at offset 0`}},
		{"unmatched close", "1 + 2)", &Error{CodeInvalidInput, 5, `unexpected ")" at offset 5: expected an operator or end of input`}},
		{"two numbers", "1 2", &Error{CodeInvalidInput, 2, `unexpected "2" at offset 2: expected an operator or end of input`}},
		{"empty parens", "()", &Error{CodeInvalidInput, 1, `unexpected ")" at offset 1: expected a number or "("`}},
		{"letter", "2 + x", &Error{CodeInvalidInput, 4, `unexpected "x" at offset 4: expected a number or "("`}},
		{"multibyte rune", "2 × 3", &Error{CodeInvalidInput, 2, `unexpected "×" at offset 2: expected an operator or end of input`}},
		{"invalid utf8", "1+\xff", &Error{CodeInvalidInput, 2, `unexpected "\xff" at offset 2: expected a number or "("`}},
		{"lone dot", ".", &Error{CodeInvalidInput, 0, `unexpected "." at offset 0: expected a number or "("`}},
		{"two dots", "1.2.3", &Error{CodeInvalidInput, 3, `unexpected "." at offset 3: expected an operator or end of input`}},
		{"exponent without digits", "1e+", &Error{CodeInvalidInput, 3, `unexpected end of input at offset 3: expected digits in the exponent of the number at offset 0`}},
		{"power operator", "2 ** 3", &Error{CodeInvalidInput, 3, `unexpected "*" at offset 3: expected a number or "("`}},
		{"number too big", "1 + 1e999", &Error{CodeInvalidInput, 4, `number "1e999" at offset 4 is out of range for a float64`}},
		{"overflow", "1e308 * 10", &Error{CodeInvalidInput, 6, `result of "*" at offset 6 overflows a float64`}},
		{"division by zero", "1 / 0", &Error{CodeDivisionByZero, 2, "division by zero at offset 2"}},
		{"division by computed zero", "8 / (2 - 2)", &Error{CodeDivisionByZero, 2, "division by zero at offset 2"}},
		{"zero by zero", "0/0", &Error{CodeDivisionByZero, 1, "division by zero at offset 1"}},
		{"remainder by zero", "5 % 0.0", &Error{CodeDivisionByZero, 2, "division by zero at offset 2"}},
		{"deep nesting refused", deep, &Error{CodeInvalidInput, MaxDepth, `nesting deeper than 256 levels at offset 256`}},
		{"deep unary refused", strings.Repeat("-", MaxDepth+1) + "1", &Error{CodeInvalidInput, MaxDepth, `nesting deeper than 256 levels at offset 256`}},
		{"too long", strings.Repeat("1", MaxLen+1), &Error{CodeInvalidInput, MaxLen, `expression is 4097 bytes long; the limit is 4096`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Eval(tt.expr)
			var got *Error
			if !errors.As(err, &got) {
				t.Fatalf("Eval(%q) = %v, %v; want error %q", tt.expr, v, err, tt.want.Msg)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Eval(%q) error (-want +got):\n%s", tt.expr, diff)
			}
		})
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1 + 2 * 3", "(1 + 2) * 3", "-(-1.5e3 % 7) / .25", "1 / 0", "((", "1e", "2 × 3", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v1, err1 := Eval(s)
		v2, err2 := Eval(s)
		if err1 != nil {
			var e *Error
			if !errors.As(err1, &e) || e.Code == "" || e.Offset < 0 || e.Offset > len(s) && e.Offset != MaxLen {
				t.Fatalf("Eval(%q): malformed error %#v", s, err1)
			}
			if err2 == nil || err1.Error() != err2.Error() {
				t.Fatalf("Eval(%q): errors differ: %v vs %v", s, err1, err2)
			}
			return
		}
		if err2 != nil || math.Float64bits(v1) != math.Float64bits(v2) {
			t.Fatalf("Eval(%q) not deterministic: %v, %v vs %v, %v", s, v1, err1, v2, err2)
		}
		if math.IsInf(v1, 0) || math.IsNaN(v1) {
			t.Fatalf("Eval(%q) = %v, want a finite number", s, v1)
		}
		// Wrapping a valid expression in parentheses keeps its value.
		if w, err := Eval("(" + s + ")"); err == nil && math.Float64bits(w) != math.Float64bits(v1) {
			t.Fatalf("Eval((%s)) = %v, want %v", s, w, v1)
		}
	})
}
