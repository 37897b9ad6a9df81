package manifest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Severity says whether a diagnostic stops a manifest from loading.
type Severity int

const (
	// Error means the manifest (or the part named) cannot be used.
	Error Severity = iota
	// Warning means the manifest loads but is probably not what its author
	// meant.
	Warning
)

func (s Severity) String() string {
	if s == Warning {
		return "warning"
	}
	return "error"
}

// Diagnostic is one problem found in a manifest, positioned so that editors
// and terminals can jump to it.
type Diagnostic struct {
	Path      string
	Line, Col int // 1-based
	Severity  Severity
	Message   string
}

// String formats the diagnostic the way compilers do, `path:line:col: msg`,
// so existing tooling (editors, grep, CI annotations) understands it.
func (d Diagnostic) String() string {
	prefix := ""
	if d.Severity == Warning {
		prefix = "warning: "
	}
	return fmt.Sprintf("%s:%d:%d: %s%s", d.Path, d.Line, d.Col, prefix, d.Message)
}

// Error makes a Diagnostic usable as an error, so callers can errors.As the
// result of Diagnostics.Err back to the individual diagnostics.
func (d Diagnostic) Error() string { return d.String() }

// Diagnostics is a list of diagnostics from one or more manifests.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error (not a warning).
func (ds Diagnostics) HasErrors() bool {
	return slices.ContainsFunc(ds, func(d Diagnostic) bool { return d.Severity == Error })
}

// Err joins the error diagnostics into one error, one per line, or returns
// nil when there are none: warnings alone never fail an operation.
func (ds Diagnostics) Err() error {
	var errs []error
	for _, d := range ds {
		if d.Severity == Error {
			errs = append(errs, d)
		}
	}
	return errors.Join(errs...)
}

// Sort orders the diagnostics by file, then position, so output is stable
// and reads top to bottom.
func (ds Diagnostics) Sort() {
	slices.SortStableFunc(ds, func(a, b Diagnostic) int {
		return cmp.Or(
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Col, b.Col),
		)
	})
}
