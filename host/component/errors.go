package component

import (
	"errors"
	"fmt"
)

// Error classes, for users and for the run record.
var (
	// ErrNotFound: no component of that name is registered.
	ErrNotFound = errors.New("not found")
	// ErrAmbiguous: a short name is claimed by several plugins.
	ErrAmbiguous = errors.New("ambiguous name")
	// ErrLaunch: the plugin binary could not be started or refused.
	ErrLaunch = errors.New("plugin launch failed")
	// ErrTransport: the plugin process failed during a call.
	ErrTransport = errors.New("plugin transport failed")
	// ErrCrashed: the plugin process exited (or was killed as hung) while
	// the call was in flight. Errors that wrap it also wrap ErrTransport.
	ErrCrashed = errors.New("plugin crashed")
	// ErrCrashLoop: the plugin crashed too often; it is not relaunched.
	ErrCrashLoop = errors.New("plugin crash loop")
)

// Error is a domain error a component reported: it ran and refused or
// failed. Code comes from the component (for example "invalid_input").
type Error struct {
	Plugin    string
	Kind      string
	Component string
	Code      string
	Message   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s %q (plugin %q): %s: %s", e.Kind, e.Component, e.Plugin, e.Code, e.Message)
}
