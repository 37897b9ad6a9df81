package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host/runner"
	"github.com/nexus-eval/nexus/host/store"
)

func newRunsCmd(g *globals) *cobra.Command {
	var db string
	cmd := &cobra.Command{
		Use:   "runs",
		Short: "List, show and export recorded runs",
	}
	cmd.PersistentFlags().StringVar(&db, "db", store.DefaultPath, "the runs database `PATH`")
	cmd.AddCommand(newRunsListCmd(&db), newRunsShowCmd(&db), newRunsExportCmd(&db))
	return cmd
}

// openExisting opens the runs database without creating one.
func openExisting(ctx context.Context, path string) (*store.Store, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("runs database %q: %w: no runs recorded yet (start one with `nexus-host run`, or pass --db)", path, store.ErrNotFound)
	}
	return store.Open(ctx, path)
}

func newRunsListCmd(db *string) *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkFormat(output, "text", "json"); err != nil {
				return err
			}
			var runs []store.RunSummary
			st, err := openExisting(cmd.Context(), *db)
			switch {
			case errors.Is(err, store.ErrNotFound):
			case err != nil:
				return err
			default:
				defer st.Close()
				if runs, err = st.ListRuns(cmd.Context(), limit); err != nil {
					return err
				}
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				if runs == nil {
					runs = []store.RunSummary{}
				}
				return writeJSON(out, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "no runs in %s\n", *db)
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tTASK\tAGENT\tRECORDED\tPASSED\tERRORS\tSTARTED")
			for _, r := range runs {
				recorded := fmt.Sprint(r.Recorded)
				if r.Total > 0 {
					recorded += fmt.Sprintf("/%d", r.Total)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", r.ID, r.Status, r.Task, r.Agent, recorded, r.Passed,
					errorCounts(r.Errors), r.StartedAt.Local().Format("2006-01-02 15:04:05"))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().IntVar(&limit, "limit", 0, "list at most `N` runs (0: all)")
	return cmd
}

func newRunsShowCmd(db *string) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "show RUN_ID",
		Short: "Show a run's summary and every instance result",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkFormat(output, "text", "json"); err != nil {
				return err
			}
			st, err := openExisting(cmd.Context(), *db)
			if err != nil {
				return err
			}
			defer st.Close()
			sum, err := runner.Load(cmd.Context(), st, args[0])
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if output == "json" {
				return writeJSON(out, sum)
			}
			printSummary(out, sum)
			fmt.Fprintln(out)
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "INSTANCE\tPASSED\tSCORE\tERROR\tDURATION\tTOKENS")
			for _, in := range sum.Instances {
				class := in.ErrorClass
				if class == "" {
					class = "-"
				}
				fmt.Fprintf(tw, "%s\t%t\t%.3g\t%s\t%s\t%d\n", in.ID, in.Passed, in.Score, class, ms(in.DurationMS), in.Tokens)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

func newRunsExportCmd(db *string) *cobra.Command {
	var format, file string
	cmd := &cobra.Command{
		Use:   "export RUN_ID --format jsonl|atif",
		Short: "Export a run's instances with their trajectories",
		Long: "Export every instance of a run, one JSON document per line: jsonl (the result and its steps)\n" +
			"or atif (one Harbor ATIF " + store.ATIFSchemaVersion + " trajectory per instance).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var export func(context.Context, io.Writer, string) error
			st, err := openExisting(cmd.Context(), *db)
			if err != nil {
				return err
			}
			defer st.Close()
			switch format {
			case "jsonl":
				export = st.ExportJSONL
			case "atif":
				export = st.ExportATIF
			default:
				return fmt.Errorf("--format %q: use jsonl or atif", format)
			}
			if file == "" || file == "-" {
				return export(cmd.Context(), cmd.OutOrStdout(), args[0])
			}
			// Write next to the target, then rename: a failed export leaves
			// no partial file.
			tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
			if err != nil {
				return fmt.Errorf("export: %w", err)
			}
			defer os.Remove(tmp.Name())
			if err := export(cmd.Context(), tmp, args[0]); err != nil {
				tmp.Close()
				return err
			}
			if err := tmp.Close(); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			if err := os.Chmod(tmp.Name(), 0o644); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			if err := os.Rename(tmp.Name(), file); err != nil {
				return fmt.Errorf("export: %w", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s\n", file)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "jsonl", "jsonl or atif")
	cmd.Flags().StringVarP(&file, "output", "o", "", "write to `FILE` instead of stdout")
	return cmd
}
