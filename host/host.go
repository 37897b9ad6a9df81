// Package host assembles the Nexus host library: it discovers plugin
// manifests, fills one registry per component kind with lazy entries, and
// owns the launcher that starts plugin processes on first use.
package host

import (
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/launch"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/manifest"
)

// Options configures a Host. The zero value is usable.
type Options struct {
	// Logger receives host and plugin logs; nil discards them.
	Logger hclog.Logger
	// StartTimeout bounds one plugin's launch; 0 means the default.
	StartTimeout time.Duration
}

// Host owns the registries and the plugin processes behind them.
type Host struct {
	Tools  *registry.Registry[component.Tool]
	Agents *registry.Registry[component.Agent]
	Tasks  *registry.Registry[component.Task]

	launcher  *launch.Launcher
	manifests []*manifest.Manifest
	diags     manifest.Diagnostics
	plugins   map[string]string // plugin name -> manifest path
}

// New returns a Host with empty registries.
func New(opts Options) *Host {
	var lopts []launch.Option
	if opts.Logger != nil {
		lopts = append(lopts, launch.WithLogger(opts.Logger))
	}
	if opts.StartTimeout > 0 {
		lopts = append(lopts, launch.WithStartTimeout(opts.StartTimeout))
	}
	return &Host{
		Tools:    registry.New[component.Tool](manifest.KindTool),
		Agents:   registry.New[component.Agent](manifest.KindAgent),
		Tasks:    registry.New[component.Task](manifest.KindTask),
		launcher: launch.New(lopts...),
		plugins:  map[string]string{},
	}
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
		return registry.Meta{Plugin: m.Plugin.Name, Version: m.Plugin.Version, Component: c, Source: m.Path}
	}
	// Names are unique per plugin and plugins are unique, so Add cannot
	// fail on a qualified name here.
	for _, c := range m.Tools {
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
