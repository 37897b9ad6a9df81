package telemetry

import (
	"context"
	"errors"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/validate"
)

// ErrorClass names the kind of failure err is, for span attributes and
// metrics: "" for success.
func ErrorClass(err error) string {
	var ce *component.Error
	switch {
	case err == nil:
		return ""
	case errors.Is(err, validate.ErrInvalidInput):
		return "invalid_input"
	case errors.Is(err, validate.ErrInvalidOutput):
		return "invalid_output"
	case errors.As(err, &ce):
		return "component_error"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, component.ErrLaunch):
		return "launch_failed"
	case errors.Is(err, component.ErrTransport):
		return "transport"
	}
	return "internal"
}

func asComponentError(err error) (*component.Error, bool) {
	var ce *component.Error
	ok := errors.As(err, &ce)
	return ce, ok
}
