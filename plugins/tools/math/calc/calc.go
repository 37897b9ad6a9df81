// Package calc evaluates arithmetic expressions with a recursive-descent
// parser:
//
//	expr    = term { ("+" | "-") term }
//	term    = unary { ("*" | "/" | "%") unary }
//	unary   = ("+" | "-") unary | primary
//	primary = number | "(" expr ")"
//	number  = digits [ "." [digits] ] [ exponent ] | "." digits [ exponent ]
//
// Binary operators are left-associative; "%" is the floating-point
// remainder (math.Mod). Input is bounded in length and nesting depth, so
// hostile input can neither blow the stack nor take long to refuse.
package calc

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"
)

// Limits on the input.
const (
	MaxLen   = 4096 // bytes
	MaxDepth = 256  // nested parentheses and unary signs
)

// Error codes, chosen to match the SDK's domain error codes.
const (
	CodeInvalidInput   = "invalid_input"
	CodeDivisionByZero = "division_by_zero"
)

// Error is an evaluation failure at a byte offset of the input.
type Error struct {
	Code   string
	Offset int
	Msg    string // complete message, naming the offset
}

func (e *Error) Error() string { return e.Msg }

// Eval evaluates expr. Every failure is an *Error; Eval never panics.
func Eval(expr string) (float64, error) {
	if len(expr) > MaxLen {
		return 0, &Error{CodeInvalidInput, MaxLen,
			fmt.Sprintf("expression is %d bytes long; the limit is %d", len(expr), MaxLen)}
	}
	p := &parser{src: expr}
	v, err := p.expr()
	if err != nil {
		return 0, err
	}
	if p.skipSpace(); p.pos < len(p.src) {
		return 0, p.unexpected("an operator or end of input")
	}
	return v, nil
}

type parser struct {
	src   string
	pos   int
	depth int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.src) {
		switch p.src[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at end of input.
func (p *parser) peek() byte {
	if p.skipSpace(); p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *parser) expr() (float64, error) {
	left, err := p.term()
	for err == nil {
		op := p.peek()
		if op != '+' && op != '-' {
			return left, nil
		}
		at := p.pos
		p.pos++
		var right float64
		if right, err = p.term(); err == nil {
			left, err = p.apply(op, at, left, right)
		}
	}
	return 0, err
}

func (p *parser) term() (float64, error) {
	left, err := p.unary()
	for err == nil {
		op := p.peek()
		if op != '*' && op != '/' && op != '%' {
			return left, nil
		}
		at := p.pos
		p.pos++
		var right float64
		if right, err = p.unary(); err == nil {
			left, err = p.apply(op, at, left, right)
		}
	}
	return 0, err
}

func (p *parser) apply(op byte, at int, a, b float64) (float64, error) {
	var v float64
	switch op {
	case '+':
		v = a + b
	case '-':
		v = a - b
	case '*':
		v = a * b
	case '/', '%':
		if b == 0 {
			return 0, &Error{CodeDivisionByZero, at, fmt.Sprintf("division by zero at offset %d", at)}
		}
		if op == '/' {
			v = a / b
		} else {
			v = math.Mod(a, b)
		}
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, &Error{CodeInvalidInput, at, fmt.Sprintf("result of %q at offset %d overflows a float64", string(op), at)}
	}
	return v, nil
}

// enter counts one level of nesting and refuses to go deeper than MaxDepth.
func (p *parser) enter() error {
	if p.depth++; p.depth > MaxDepth {
		return &Error{CodeInvalidInput, p.pos,
			fmt.Sprintf("nesting deeper than %d levels at offset %d", MaxDepth, p.pos)}
	}
	return nil
}

func (p *parser) unary() (float64, error) {
	switch p.peek() {
	case '+', '-':
		sign := p.src[p.pos]
		if err := p.enter(); err != nil {
			return 0, err
		}
		p.pos++
		v, err := p.unary()
		p.depth--
		if sign == '-' {
			v = -v
		}
		return v, err
	}
	return p.primary()
}

func (p *parser) primary() (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		open := p.pos
		if err := p.enter(); err != nil {
			return 0, err
		}
		p.pos++
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, p.unexpected(fmt.Sprintf("an operator or \")\" to close \"(\" at offset %d", open))
		}
		p.pos++
		p.depth--
		return v, nil
	case isDigit(c) || c == '.':
		return p.number()
	}
	return 0, p.unexpected(`a number or "("`)
}

func (p *parser) number() (float64, error) {
	start := p.pos
	digits := p.digits()
	if p.pos < len(p.src) && p.src[p.pos] == '.' {
		p.pos++
		digits += p.digits()
	}
	if digits == 0 {
		p.pos = start
		return 0, p.unexpected(`a number or "("`)
	}
	if p.pos < len(p.src) && (p.src[p.pos] == 'e' || p.src[p.pos] == 'E') {
		p.pos++
		if p.pos < len(p.src) && (p.src[p.pos] == '+' || p.src[p.pos] == '-') {
			p.pos++
		}
		if p.digits() == 0 {
			return 0, p.unexpected("digits in the exponent of the number at offset " + strconv.Itoa(start))
		}
	}
	text := p.src[start:p.pos]
	// The scan above admits only valid syntax, so the only possible error
	// is a range error: underflow yields 0 (fine), overflow yields ±Inf.
	v, _ := strconv.ParseFloat(text, 64)
	if math.IsInf(v, 0) {
		return 0, &Error{CodeInvalidInput, start,
			fmt.Sprintf("number %q at offset %d is out of range for a float64", text, start)}
	}
	return v, nil
}

func (p *parser) digits() int {
	n := 0
	for p.pos < len(p.src) && isDigit(p.src[p.pos]) {
		p.pos++
		n++
	}
	return n
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// unexpected reports the byte (or end of input) at p.pos.
func (p *parser) unexpected(expected string) *Error {
	what := "end of input"
	if p.pos < len(p.src) {
		_, size := utf8.DecodeRuneInString(p.src[p.pos:])
		what = strconv.Quote(p.src[p.pos : p.pos+size])
	}
	return &Error{CodeInvalidInput, p.pos,
		fmt.Sprintf("unexpected %s at offset %d: expected %s", what, p.pos, expected)}
}
