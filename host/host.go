// Package host assembles the Nexus host library: it discovers plugin
// manifests, fills one registry per component kind with lazy entries, and
// owns the launcher that starts plugin processes on first use.
package host

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/hostsvc"
	"github.com/nexus-eval/nexus/host/integrity"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/host/runtime"
	"github.com/nexus-eval/nexus/host/telemetry"
	"github.com/nexus-eval/nexus/host/validate"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/manifest"
)

// Options configures a Host. The zero value is usable.
type Options struct {
	// Logger receives host and plugin logs; nil discards them.
	Logger hclog.Logger
	// StartTimeout bounds one plugin's launch; 0 means the default.
	StartTimeout time.Duration
	// Tracing receives the host's spans and the spans plugins send back;
	// nil traces nothing. The caller shuts it down after Close.
	Tracing *telemetry.Tracing
	// Metrics counts calls; nil counts nothing.
	Metrics *telemetry.Metrics
	// IdleTimeout stops plugins idle that long (relaunched on demand); 0
	// keeps them running.
	IdleTimeout time.Duration
	// HealthInterval is how often running plugins are pinged (a hung one
	// is killed); 0 means launch.DefaultHealthInterval, negative disables.
	HealthInterval time.Duration
	// LLMs are the LLM clients executions offer plugins; nil offers none.
	LLMs *llm.Clients
	// Providers make the runtimes of executions; nil means
	// runtime.DefaultProviders().
	Providers *runtime.Providers
	// Runtime is the provider of an execution's runtime: "sandbox" (the
	// default) or "local".
	Runtime string
	// Lock pins the binaries that their manifests leave unpinned
	// (nexus-host plugins lock); nil pins nothing more.
	Lock *integrity.Lock
	// PluginProcs is the GOMAXPROCS of SDK plugins on the host: 0 means
	// launch.DefaultPluginProcs, negative leaves it to the Go runtime.
	PluginProcs int
	// PluginEnv adds "K=V" variables to every plugin's (minimal)
	// environment.
	PluginEnv []string
	// NoProcessors leaves the registries without the built-in processors
	// (validation, tracing, metrics); for measuring what they cost.
	NoProcessors bool
}

// Host owns the registries and the plugin processes behind them.
type Host struct {
	Tools  *registry.Registry[component.Tool]
	Agents *registry.Registry[component.Agent]
	Tasks  *registry.Registry[component.Task]

	launcher  *launch.Launcher
	opts      Options
	logger    hclog.Logger
	calls     *hostsvc.Calls
	manifests []*manifest.Manifest
	diags     manifest.Diagnostics
	plugins   map[string]string // plugin name -> manifest path
}

// New returns a Host with empty registries.
//
// Unless opts.NoProcessors is set, every registry gets the built-in
// processors in this order: validation, tracing (when opts.Tracing is
// set), metrics (when opts.Metrics is set). An embedder adds its own with
// the registries' Use.
func New(opts Options) *Host {
	logger := opts.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	h := &Host{
		Tools:   registry.New[component.Tool](manifest.KindTool),
		Agents:  registry.New[component.Agent](manifest.KindAgent),
		Tasks:   registry.New[component.Task](manifest.KindTask),
		opts:    opts,
		logger:  logger,
		calls:   &hostsvc.Calls{},
		plugins: map[string]string{},
	}
	h.launcher = launch.New(h.launchOptions()...)
	if !opts.NoProcessors {
		h.use(validate.New())
		if opts.Tracing != nil {
			h.use(opts.Tracing.Processors())
		}
		if opts.Metrics != nil {
			h.use(opts.Metrics.Processors())
		}
	}
	return h
}

// launchOptions configure every launcher of the host: the shared one, and
// the per-execution ones of runtime tools.
func (h *Host) launchOptions(extra ...launch.Option) []launch.Option {
	opts := h.opts
	var sink hostsvc.SpanSink
	if opts.Tracing != nil && opts.Tracing.Enabled() {
		sink = opts.Tracing
	}
	lopts := []launch.Option{
		launch.WithLogger(h.logger),
		launch.WithHostService(func(m *manifest.Manifest) pluginv1.HostServiceServer {
			return hostsvc.NewServer(hostsvc.Config{Manifest: m, Logger: h.logger, Sink: sink, Calls: h.calls, Tools: h.Tools})
		}),
		launch.WithCallHook(func(ctx context.Context, m *manifest.Manifest) (context.Context, func()) {
			exec, ok := execution.From(ctx)
			if !ok {
				return ctx, func() {}
			}
			return h.calls.Begin(ctx, exec, m.Plugin.Name)
		}),
	}
	if opts.StartTimeout > 0 {
		lopts = append(lopts, launch.WithStartTimeout(opts.StartTimeout))
	}
	if opts.IdleTimeout > 0 {
		lopts = append(lopts, launch.WithIdleTimeout(opts.IdleTimeout))
	}
	if opts.HealthInterval != 0 {
		lopts = append(lopts, launch.WithHealthInterval(max(opts.HealthInterval, 0)))
	}
	if len(opts.PluginEnv) > 0 {
		lopts = append(lopts, launch.WithEnv(opts.PluginEnv...))
	}
	if opts.PluginProcs != 0 {
		lopts = append(lopts, launch.WithPluginProcs(max(opts.PluginProcs, 0)))
	}
	if opts.Lock != nil {
		lopts = append(lopts, launch.WithPins(opts.Lock.Pin))
	}
	if sink != nil {
		lopts = append(lopts, launch.WithSpanFlush())
	}
	return append(lopts, extra...)
}

// processorSet is a processor for every kind.
type processorSet interface {
	Tools() registry.Processor[component.Tool]
	Agents() registry.Processor[component.Agent]
	Tasks() registry.Processor[component.Task]
}

func (h *Host) use(p processorSet) {
	h.Tools.Use(p.Tools())
	h.Agents.Use(p.Agents())
	h.Tasks.Use(p.Tasks())
}

// Discover scans roots and adds every component of every valid manifest to
// its registry. No process starts. Broken manifests become diagnostics and
// are skipped; discovery goes on. It returns the diagnostics of this scan.
func (h *Host) Discover(roots []manifest.Root) manifest.Diagnostics {
	ms, diags := manifest.Scan(roots)
	for _, m := range ms {
		if prev, dup := h.plugins[m.Plugin.Name]; dup {
			diags = append(diags, manifest.Diagnostic{
				Path: m.Path, Line: 1, Col: 1, Severity: manifest.Error,
				Message: fmt.Sprintf("plugin %q is also declared by %s: plugin names must be unique; this manifest is skipped", m.Plugin.Name, prev),
			})
			continue
		}
		h.plugins[m.Plugin.Name] = m.Path
		h.manifests = append(h.manifests, m)
		h.add(m)
	}
	diags = append(diags, h.conflicts()...)
	diags.Sort()
	h.diags = append(h.diags, diags...)
	return diags
}

// add registers m's components lazily.
func (h *Host) add(m *manifest.Manifest) {
	slot := h.launcher.Slot(m)
	meta := func(c manifest.Component) registry.Meta {
		return registry.Meta{Plugin: m.Plugin.Name, Version: m.Plugin.Version, Component: c, Source: m.Path, Origin: slot.Origin}
	}
	// Names are unique per plugin and plugins are unique, so Add cannot
	// fail on a qualified name here.
	for _, c := range m.Tools {
		if c.Kind == manifest.ToolRuntime {
			_ = h.Tools.Add(meta(c), h.runtimeTool(m, c.Name))
			continue
		}
		_ = h.Tools.Add(meta(c), launchThen(slot, slot.Tool, c.Name))
	}
	for _, c := range m.Agents {
		_ = h.Agents.Add(meta(c), launchThen(slot, slot.Agent, c.Name))
	}
	for _, c := range m.Tasks {
		_ = h.Tasks.Add(meta(c), launchThen(slot, slot.Task, c.Name))
	}
}

// conflicts reports short names claimed by several plugins.
func (h *Host) conflicts() manifest.Diagnostics {
	var out manifest.Diagnostics
	add := func(cs []registry.Conflict) {
		for _, c := range cs {
			last := c.Entries[len(c.Entries)-1]
			out = append(out, manifest.Diagnostic{Path: last.Source, Line: 1, Col: 1, Severity: manifest.Warning, Message: c.String()})
		}
	}
	add(h.Tools.Conflicts())
	add(h.Agents.Conflicts())
	add(h.Tasks.Conflicts())
	return out
}

// Diagnostics returns every diagnostic of every Discover so far.
func (h *Host) Diagnostics() manifest.Diagnostics { return h.diags }

// Manifests returns the manifests discovered so far.
func (h *Host) Manifests() []*manifest.Manifest { return h.manifests }

// Running returns the number of live plugin processes.
func (h *Host) Running() int { return h.launcher.Running() }

// Close stops every plugin process.
func (h *Host) Close() error { return h.launcher.Close() }
