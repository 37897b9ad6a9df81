package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/manifest"
)

// globals holds the flags every command shares.
type globals struct {
	plugins  []string
	logLevel string
	logger   hclog.Logger
}

func newRootCmd() *cobra.Command {
	g := &globals{}
	root := &cobra.Command{
		Use:           "nexus-host",
		Short:         "Discover, inspect and call Nexus plugins",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			level := hclog.LevelFromString(g.logLevel)
			if level == hclog.NoLevel {
				return fmt.Errorf("--log-level %q: use trace, debug, info, warn or error", g.logLevel)
			}
			g.logger = hclog.New(&hclog.LoggerOptions{Name: "nexus-host", Level: level, Output: cmd.ErrOrStderr()})
			return nil
		},
	}
	root.PersistentFlags().StringArrayVar(&g.plugins, "plugins", nil, "also discover plugins in `DIR` (repeatable)")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level: trace, debug, info, warn, error")
	root.AddCommand(
		newListCmd(g),
		newInspectCmd(g),
		newCallCmd(g),
		newValidateCmd(g),
		newPluginsCmd(g),
	)
	return root
}

// roots are the discovery roots: the defaults, $NEXUS_PLUGIN_PATH, and
// every --plugins flag.
func (g *globals) roots() ([]manifest.Root, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	roots := manifest.DefaultRoots(cwd, os.Getenv("NEXUS_PLUGIN_PATH"))
	for _, d := range g.plugins {
		roots = append(roots, manifest.Root{Dir: d, Explicit: true})
	}
	return roots, nil
}

// discover builds a host from every root. Diagnostics go to stderr as
// warnings: one broken plugin must not stop the others from being used.
func (g *globals) discover(stderr io.Writer) (*host.Host, error) {
	roots, err := g.roots()
	if err != nil {
		return nil, err
	}
	h := host.New(host.Options{Logger: g.logger})
	for _, d := range h.Discover(roots) {
		fmt.Fprintln(stderr, d.String())
	}
	return h, nil
}

// readOutputFormat checks an -o flag value.
func checkFormat(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return fmt.Errorf("-o %q: use %s", format, strings.Join(allowed, " or "))
}
