// Package registry holds the generic Registry[T] that serves agents, tools
// and tasks alike: lazy entries that load on first lookup, in-process
// entries, unique names per kind with plugin-qualified names, and the
// ordered processor pipeline applied once when an entry loads.
package registry

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/manifest"
)

// Builtin is the plugin name of in-process entries added with Register.
const Builtin = "builtin"

// Meta describes an entry without loading it.
type Meta struct {
	Kind    manifest.Kind
	Plugin  string
	Version string
	// Component holds the name, description, tags, schemas, tool kind and
	// task mode as declared in the manifest.
	Component manifest.Component
	// Source is the manifest path, or "in-process" for Register.
	Source string
	// Origin describes the plugin process serving the entry right now; nil
	// for in-process entries.
	Origin func() component.Origin
}

// Name is the entry's short name.
func (m Meta) Name() string { return m.Component.Name }

// Qualified is the entry's plugin-qualified name, unique per kind.
func (m Meta) Qualified() string { return m.Plugin + "/" + m.Component.Name }

// Loader produces an entry's value on first lookup.
type Loader[T any] func(ctx context.Context) (T, error)

// Processor wraps an entry's value when it loads: validation, tracing and
// metrics are processors. The pipeline applies processors in order, each to
// the result of the previous one, so the last is the outermost.
type Processor[T any] interface {
	Name() string
	Process(meta Meta, v T) (T, error)
}

// Conflict is a short name claimed by more than one plugin. The short name
// is then unusable; the qualified names still work.
type Conflict struct {
	Kind    manifest.Kind
	Name    string
	Entries []Meta
}

func (c Conflict) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %q is declared by %d plugins:", c.Kind, c.Name, len(c.Entries))
	const shown = 5 // a name claimed by thousands must not make a huge message
	for _, e := range c.Entries[:min(len(c.Entries), shown)] {
		fmt.Fprintf(&b, " %s (%s);", e.Qualified(), e.Source)
	}
	if n := len(c.Entries) - shown; n > 0 {
		fmt.Fprintf(&b, " and %d more;", n)
	}
	b.WriteString(" use the qualified name, or remove one of them")
	return b.String()
}

// Registry holds the entries of one kind.
type Registry[T any] struct {
	kind manifest.Kind

	mu         sync.RWMutex
	entries    map[string]*entry[T]   // by qualified name
	short      map[string][]*entry[T] // by short name
	processors []Processor[T]
}

// New returns an empty registry for kind.
func New[T any](kind manifest.Kind) *Registry[T] {
	return &Registry[T]{
		kind:    kind,
		entries: map[string]*entry[T]{},
		short:   map[string][]*entry[T]{},
	}
}

// Kind is the kind of component the registry holds.
func (r *Registry[T]) Kind() manifest.Kind { return r.kind }

// Use appends processors to the pipeline. Entries that already loaded keep
// the pipeline they loaded with.
func (r *Registry[T]) Use(ps ...Processor[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.processors = append(r.processors, ps...)
}

// Processors returns the pipeline in order.
func (r *Registry[T]) Processors() []Processor[T] {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Clone(r.processors)
}

// Add registers a lazy entry; load runs on the first Get. It fails only
// when the qualified name is taken.
func (r *Registry[T]) Add(meta Meta, load Loader[T]) error {
	meta.Kind = r.kind
	q := meta.Qualified()
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.entries[q]; ok {
		return fmt.Errorf("%s %q is already registered from %s: plugin names must be unique", r.kind, q, prev.meta.Source)
	}
	e := &entry[T]{meta: meta, load: load}
	r.entries[q] = e
	r.short[meta.Name()] = append(r.short[meta.Name()], e)
	return nil
}

// Register adds an in-process value under the Builtin plugin unless
// meta.Plugin is set. The processors still apply on first Get.
func (r *Registry[T]) Register(meta Meta, v T) error {
	if meta.Plugin == "" {
		meta.Plugin = Builtin
	}
	if meta.Source == "" {
		meta.Source = "in-process"
	}
	return r.Add(meta, func(context.Context) (T, error) { return v, nil })
}

// List returns the metadata of every entry, sorted by qualified name. It
// never loads anything.
func (r *Registry[T]) List() []Meta {
	r.mu.RLock()
	out := make([]Meta, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e.meta)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Meta) int { return strings.Compare(a.Qualified(), b.Qualified()) })
	return out
}

// Conflicts lists the short names claimed by more than one plugin.
func (r *Registry[T]) Conflicts() []Conflict {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []Conflict
	for name, es := range r.short {
		if len(es) < 2 {
			continue
		}
		c := Conflict{Kind: r.kind, Name: name}
		for _, e := range es {
			c.Entries = append(c.Entries, e.meta)
		}
		slices.SortFunc(c.Entries, func(a, b Meta) int { return strings.Compare(a.Qualified(), b.Qualified()) })
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Conflict) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Lookup returns the metadata of name (short or qualified) without loading.
func (r *Registry[T]) Lookup(name string) (Meta, error) {
	e, err := r.resolve(name)
	if err != nil {
		return Meta{}, err
	}
	return e.meta, nil
}

// Get returns the processed value of name, loading it on first use.
// Concurrent first lookups share one load; a failed load is not cached, so
// the next Get tries again.
func (r *Registry[T]) Get(ctx context.Context, name string) (T, error) {
	e, err := r.resolve(name)
	if err != nil {
		var zero T
		return zero, err
	}
	return e.get(ctx, r.Processors)
}

func (r *Registry[T]) resolve(name string) (*entry[T], error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if strings.Contains(name, "/") {
		if e, ok := r.entries[name]; ok {
			return e, nil
		}
	} else {
		switch es := r.short[name]; len(es) {
		case 0:
		case 1:
			return es[0], nil
		default:
			names := make([]string, len(es))
			for i, e := range es {
				names[i] = e.meta.Qualified()
			}
			slices.Sort(names)
			return nil, fmt.Errorf("%s %q: %w: declared by %s; use a qualified name", r.kind, name, component.ErrAmbiguous, strings.Join(names, ", "))
		}
	}
	return nil, r.notFound(name)
}

func (r *Registry[T]) notFound(name string) error {
	var candidates []string
	for q := range r.entries {
		candidates = append(candidates, q)
	}
	for s := range r.short {
		candidates = append(candidates, s)
	}
	hint := fmt.Sprintf("run `nexus-host list --kind %s` to see them all", r.kind)
	if s := suggest(name, candidates); len(s) > 0 {
		hint = fmt.Sprintf("did you mean %s?", quoteJoin(s))
	}
	return fmt.Errorf("%s %q: %w: %s", r.kind, name, component.ErrNotFound, hint)
}

// entry is one registered component and its load state.
type entry[T any] struct {
	meta Meta
	load Loader[T]

	mu      sync.Mutex
	loaded  bool
	value   T
	loading chan struct{} // closed when the in-flight load ends
	err     error         // result of the last finished load
}

func (e *entry[T]) get(ctx context.Context, processors func() []Processor[T]) (T, error) {
	e.mu.Lock()
	if e.loaded {
		v := e.value
		e.mu.Unlock()
		return v, nil
	}
	done := e.loading
	if done == nil {
		done = make(chan struct{})
		e.loading = done
		// The load runs detached from this caller: another caller may be
		// waiting on it, and a launch abandoned half-way helps nobody.
		go e.run(context.WithoutCancel(ctx), processors(), done)
	}
	e.mu.Unlock()

	select {
	case <-done:
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("%s %q: %w", e.meta.Kind, e.meta.Qualified(), ctx.Err())
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.loaded {
		return e.value, nil
	}
	var zero T
	return zero, e.err
}

func (e *entry[T]) run(ctx context.Context, processors []Processor[T], done chan struct{}) {
	v, err := e.load(ctx)
	if err == nil {
		for _, p := range processors {
			if v, err = p.Process(e.meta, v); err != nil {
				err = fmt.Errorf("%s %q: processor %s: %w", e.meta.Kind, e.meta.Qualified(), p.Name(), err)
				break
			}
		}
	}
	e.mu.Lock()
	if err == nil {
		e.loaded, e.value = true, v
	}
	e.err = err
	e.loading = nil
	e.mu.Unlock()
	close(done)
}

// ProcessorFunc makes a Processor from a name and a function.
func ProcessorFunc[T any](name string, f func(meta Meta, v T) (T, error)) Processor[T] {
	return processorFunc[T]{name, f}
}

type processorFunc[T any] struct {
	name string
	f    func(Meta, T) (T, error)
}

func (p processorFunc[T]) Name() string                   { return p.name }
func (p processorFunc[T]) Process(m Meta, v T) (T, error) { return p.f(m, v) }
