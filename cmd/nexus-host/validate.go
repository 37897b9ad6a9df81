package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/manifest"
)

// errDiagnostics makes validate exit 1 after it printed the diagnostics.
type errDiagnostics int

func (n errDiagnostics) Error() string { return fmt.Sprintf("%d problem(s) found", int(n)) }

func newValidateCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "validate",
		Short: "Check every manifest, deeply (starts no plugin); exit 1 on any problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			roots, err := g.roots()
			if err != nil {
				return err
			}
			h := host.New(host.Options{Logger: g.logger})
			defer h.Close()
			diags := h.Discover(roots)
			for _, m := range h.Manifests() {
				diags = append(diags, manifest.CheckSchemas(m)...)
			}
			diags.Sort()
			for _, d := range diags {
				fmt.Fprintln(cmd.OutOrStdout(), d.String())
			}
			if len(diags) > 0 {
				return errDiagnostics(len(diags))
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d plugin(s) checked, no problems\n", len(h.Manifests()))
			return nil
		},
	}
}
