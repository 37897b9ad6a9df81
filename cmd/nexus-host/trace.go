package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host/traceview"
)

func newTraceCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "trace",
		Short: "Read trace files written with --trace",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show FILE",
		Short: "Print the traces of FILE as indented trees with durations and errors",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			spans, err := traceview.Read(f)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if len(spans) == 0 {
				return fmt.Errorf("%s holds no spans: was it written with --trace?", args[0])
			}
			return traceview.Render(cmd.OutOrStdout(), spans)
		},
	})
	return cmd
}
