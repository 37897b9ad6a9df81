package sdk

import (
	"errors"
	"fmt"
)

// Error codes the host understands. A handler may use its own codes too.
const (
	// CodeInvalidInput: the input was well-formed but unusable.
	CodeInvalidInput = "invalid_input"
	// CodeFailed: the component ran and failed (the default for plain errors).
	CodeFailed = "failed"
	// CodePanic: the handler panicked; the plugin recovered and keeps serving.
	CodePanic = "panic"
)

// Error is a domain error: the component ran and refused or failed. It
// travels to the host in the response, not as a transport failure.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// asError turns any handler error into an *Error.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeFailed, Message: err.Error()}
}
