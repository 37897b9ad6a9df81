package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/registry"
	"github.com/nexus-eval/nexus/manifest"
)

// listEntry is one row of `list -o json`.
type listEntry struct {
	Kind        manifest.Kind `json:"kind"`
	Name        string        `json:"name"`
	Qualified   string        `json:"qualified"`
	Plugin      string        `json:"plugin"`
	Version     string        `json:"version"`
	Description string        `json:"description"`
	Tags        []string      `json:"tags"`
	ToolKind    string        `json:"tool_kind,omitempty"`
	TaskMode    string        `json:"task_mode"`
	Manifest    string        `json:"manifest"`
}

func newListCmd(g *globals) *cobra.Command {
	var kind, format string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List discovered agents, tools and tasks (starts no plugin)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(format, "table", "json"); err != nil {
				return err
			}
			kinds, err := parseKinds(kind)
			if err != nil {
				return err
			}
			h, err := g.discover(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			entries := listEntries(h, kinds)
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "KIND\tNAME\tPLUGIN\tVERSION\tDESCRIPTION")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Kind, e.Name, e.Plugin, e.Version, e.Description)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only this kind: agent, tool or task")
	cmd.Flags().StringVarP(&format, "output", "o", "table", "output format: table or json")
	return cmd
}

func parseKinds(kind string) ([]manifest.Kind, error) {
	if kind == "" {
		return manifest.Kinds, nil
	}
	for _, k := range manifest.Kinds {
		if string(k) == kind {
			return []manifest.Kind{k}, nil
		}
	}
	return nil, fmt.Errorf("--kind %q: use agent, tool or task", kind)
}

// metas returns the entries of one kind without loading anything.
func metas(h *host.Host, k manifest.Kind) []registry.Meta {
	switch k {
	case manifest.KindTool:
		return h.Tools.List()
	case manifest.KindAgent:
		return h.Agents.List()
	case manifest.KindTask:
		return h.Tasks.List()
	}
	return nil
}

func listEntries(h *host.Host, kinds []manifest.Kind) []listEntry {
	entries := []listEntry{}
	for _, k := range kinds {
		for _, m := range metas(h, k) {
			entries = append(entries, toListEntry(m))
		}
	}
	return entries
}

func toListEntry(m registry.Meta) listEntry {
	tags := m.Component.Tags
	if tags == nil {
		tags = []string{}
	}
	return listEntry{
		Kind:        m.Kind,
		Name:        m.Name(),
		Qualified:   m.Qualified(),
		Plugin:      m.Plugin,
		Version:     m.Version,
		Description: m.Component.Description,
		Tags:        tags,
		ToolKind:    m.Component.Kind,
		TaskMode:    m.Component.Task,
		Manifest:    m.Source,
	}
}

// lookupAll finds name in each of kinds without loading anything.
func lookupAll(h *host.Host, name string, kinds []manifest.Kind) ([]registry.Meta, error) {
	var found []registry.Meta
	var notFound []error
	for _, k := range kinds {
		var m registry.Meta
		var err error
		switch k {
		case manifest.KindTool:
			m, err = h.Tools.Lookup(name)
		case manifest.KindAgent:
			m, err = h.Agents.Lookup(name)
		case manifest.KindTask:
			m, err = h.Tasks.Lookup(name)
		}
		switch {
		case err == nil:
			found = append(found, m)
		case errors.Is(err, component.ErrNotFound):
			notFound = append(notFound, err)
		default:
			return nil, err
		}
	}
	if len(found) == 0 {
		return nil, errors.Join(notFound...)
	}
	return found, nil
}
