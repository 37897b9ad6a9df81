// Package validate is the validation processor: it checks every input
// against its component's JSON Schema before the plugin is called, and
// every output after, so no plugin author writes that code. Schemas are
// compiled once, on first use, and shared by every component that uses the
// same schema text.
package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/manifest"
)

// Sentinels for errors.Is: whose fault a validation failure is.
var (
	// ErrInvalidInput: the caller sent a document the schema rejects; the
	// plugin was not called.
	ErrInvalidInput = errors.New("invalid input")
	// ErrInvalidOutput: the plugin returned a document its own schema
	// rejects: a bug in the plugin.
	ErrInvalidOutput = errors.New("invalid output")
)

// Error is a schema violation.
type Error struct {
	// Kind, Component and Plugin name what was called.
	Kind, Component, Plugin string
	// Document is what was checked: "input", "output", "task arguments" or
	// "agent output".
	Document string
	// Pointer is the JSON pointer of the offending value ("" is the root).
	Pointer string
	// Keyword is the failing JSON Schema keyword ("type", "required", ...).
	Keyword string
	// Value is the offending value as JSON, shortened.
	Value string
	// Reason is the validator's explanation.
	Reason string

	sentinel error
}

func (e *Error) Error() string {
	at := e.Pointer
	if at == "" {
		at = "(root)"
	}
	msg := fmt.Sprintf("%s %q: invalid %s at %s: %s", e.Kind, e.Plugin+"/"+e.Component, e.Document, at, e.Reason)
	if e.Value != "" {
		msg += fmt.Sprintf(" (value %s)", e.Value)
	}
	if errors.Is(e.sentinel, ErrInvalidOutput) {
		msg += fmt.Sprintf(": this is a bug in plugin %q, not in the call; report it to the plugin's author", e.Plugin)
	}
	return msg
}

// Unwrap lets errors.Is tell input from output failures.
func (e *Error) Unwrap() error { return e.sentinel }

// Validator is the validation processor for all three kinds.
type Validator struct {
	schemas sync.Map // schema text -> *compiled
}

// New returns a Validator with an empty schema cache.
func New() *Validator { return &Validator{} }

// Name is the processor's name.
func (v *Validator) Name() string { return "validation" }

// compiled is one schema, compiled on first use.
type compiled struct {
	resolve func() (*jsonschema.Resolved, error)
}

func (v *Validator) schema(text string) *compiled {
	if c, ok := v.schemas.Load(text); ok {
		return c.(*compiled)
	}
	c := &compiled{resolve: sync.OnceValues(func() (*jsonschema.Resolved, error) {
		src := text
		if strings.TrimSpace(src) == "" {
			// No schema (an in-process entry registered without one)
			// constrains nothing; manifests always declare both.
			src = "true"
		}
		var s jsonschema.Schema
		if err := json.Unmarshal([]byte(src), &s); err != nil {
			return nil, err
		}
		// The validator would recurse until the stack overflows, which
		// no recover can catch: refuse such a schema up front.
		if err := manifest.CheckRefCycles([]byte(src)); err != nil {
			return nil, err
		}
		return s.Resolve(nil)
	})}
	actual, _ := v.schemas.LoadOrStore(text, c)
	return actual.(*compiled)
}

// check validates doc against c. meta and document name the error.
func (c *compiled) check(meta registry.Meta, document string, sentinel error, doc []byte) error {
	rs, err := c.resolve()
	if err != nil {
		// The manifest was checked at discovery; a schema the validator
		// cannot compile is the plugin's problem, reported on every call.
		return fmt.Errorf("%s %q: its %s schema does not compile: %v: run `nexus-host validate`", meta.Kind, meta.Qualified(), document, err)
	}
	if len(doc) == 0 {
		doc = []byte("null")
	}
	var inst any
	if err := json.Unmarshal(doc, &inst); err != nil {
		return &Error{Kind: string(meta.Kind), Component: meta.Name(), Plugin: meta.Plugin, Document: document,
			Keyword: "json", Reason: "not valid JSON: " + err.Error(), sentinel: sentinel}
	}
	if err := rs.Validate(inst); err != nil {
		e := explain(rs, inst, err)
		e.Kind, e.Component, e.Plugin, e.Document, e.sentinel = string(meta.Kind), meta.Name(), meta.Plugin, document, sentinel
		return e
	}
	return nil
}
