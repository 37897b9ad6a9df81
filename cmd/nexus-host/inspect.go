package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host/registry"
)

// inspectEntry is `inspect -o json`: a list entry plus its schemas.
type inspectEntry struct {
	listEntry
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

func newInspectCmd(g *globals) *cobra.Command {
	var kind, format string
	cmd := &cobra.Command{
		Use:   "inspect NAME",
		Short: "Show a component's metadata and schemas (starts no plugin)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(format, "text", "json"); err != nil {
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
			found, err := lookupAll(h, args[0], kinds)
			if err != nil {
				return err
			}
			entries := make([]inspectEntry, len(found))
			for i, m := range found {
				entries[i] = toInspectEntry(m)
			}
			if format == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(entries)
			}
			for i, e := range entries {
				if i > 0 {
					fmt.Fprintln(cmd.OutOrStdout())
				}
				printInspect(cmd.OutOrStdout(), e)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "only this kind: agent, tool or task")
	cmd.Flags().StringVarP(&format, "output", "o", "text", "output format: text or json")
	return cmd
}

func toInspectEntry(m registry.Meta) inspectEntry {
	return inspectEntry{
		listEntry:    toListEntry(m),
		InputSchema:  json.RawMessage(m.Component.InputSchema),
		OutputSchema: json.RawMessage(m.Component.OutputSchema),
	}
}

func printInspect(w io.Writer, e inspectEntry) {
	fmt.Fprintf(w, "%s %s\n", e.Kind, e.Qualified)
	fmt.Fprintf(w, "  description: %s\n", e.Description)
	fmt.Fprintf(w, "  plugin:      %s %s\n", e.Plugin, e.Version)
	fmt.Fprintf(w, "  manifest:    %s\n", e.Manifest)
	if len(e.Tags) > 0 {
		fmt.Fprintf(w, "  tags:        %v\n", e.Tags)
	}
	if e.ToolKind != "" {
		fmt.Fprintf(w, "  runs:        %s\n", e.ToolKind)
	}
	fmt.Fprintf(w, "  task mode:   %s\n", e.TaskMode)
	fmt.Fprintf(w, "  input schema:\n%s\n", indentJSON(e.InputSchema, "    "))
	fmt.Fprintf(w, "  output schema:\n%s\n", indentJSON(e.OutputSchema, "    "))
}

func indentJSON(raw []byte, prefix string) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, prefix, "  "); err != nil {
		return prefix + string(raw)
	}
	return prefix + b.String()
}
