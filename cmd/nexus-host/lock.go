package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host/integrity"
)

func newLockCmd(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "lock",
		Short: "Write the sha256 of every discovered plugin binary to the lock file (starts no plugin)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := g.discover(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			l, err := integrity.Write(file, h.Manifests())
			if err != nil {
				return err
			}
			for _, e := range l.Plugins {
				fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s\n", e.SHA256, e.Name, e.Binary)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "locked %d plugin(s) in %s\n", len(l.Plugins), file)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", integrity.LockFileName, "lock file `PATH`")
	return cmd
}

// errProblems makes verify exit 1 after listing what disagrees.
type errProblems []integrity.Problem

func (ps errProblems) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d plugin(s) do not match the lock file:", len(ps))
	for _, p := range ps {
		b.WriteString("\n  ")
		b.WriteString(p.String())
	}
	return b.String()
}

func newVerifyCmd(g *globals) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every discovered plugin binary against the lock file (starts no plugin); exit 1 on any problem",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := integrity.Read(file)
			if err != nil {
				return err
			}
			h, err := g.discover(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			if probs := integrity.Verify(l, h.Manifests()); len(probs) > 0 {
				return errProblems(probs)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d plugin(s) match %s\n", len(l.Plugins), file)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", integrity.LockFileName, "lock file `PATH`")
	return cmd
}
