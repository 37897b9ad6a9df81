package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/integrity"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/telemetry"
	"github.com/nexus-eval/nexus/manifest"
)

// globals holds the flags every command shares.
type globals struct {
	plugins  []string
	logLevel string
	trace    string
	config   string
	runtime  string
	lock     string
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
	root.PersistentFlags().StringVar(&g.trace, "trace", "", "write every span (host and plugins) to `FILE` as OTLP JSON lines; OTEL_EXPORTER_OTLP_* variables work too")
	root.PersistentFlags().StringVar(&g.config, "config", "", "host config `FILE` (LLM clients); default $NEXUS_CONFIG, else .nexus/config.toml, else ~/.config/nexus/config.toml")
	root.PersistentFlags().StringVar(&g.lock, "lock", "", "pin binaries with this lock `FILE` (nexus-host plugins lock); default "+integrity.LockFileName+" in the working directory when it exists")
	root.PersistentFlags().StringVar(&g.runtime, "runtime", "sandbox", "where executions run their tools and evaluations: sandbox (bubblewrap) or local (no isolation)")
	root.AddCommand(
		newRunCmd(g),
		newRunsCmd(g),
		newListCmd(g),
		newInspectCmd(g),
		newCallCmd(g),
		newValidateCmd(g),
		newPluginsCmd(g),
		newTraceCmd(),
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

// discover builds a host from every root, for commands that start no
// plugin. Diagnostics go to stderr: one broken plugin must not stop the
// others from being used.
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

// session is a host that may call plugins, with its telemetry.
type session struct {
	*host.Host
	tracing *telemetry.Tracing
	metrics *telemetry.Metrics
	llm     *llm.Config
	clients *llm.Clients
}

// open discovers plugins into a host wired with tracing and metrics.
func (g *globals) open(ctx context.Context, stderr io.Writer) (*session, error) {
	roots, err := g.roots()
	if err != nil {
		return nil, err
	}
	tracing, err := telemetry.NewTracing(ctx, telemetry.Options{TraceFile: g.trace, FromEnv: true, Logger: g.logger})
	if err != nil {
		return nil, err
	}
	metrics, err := telemetry.NewMetrics()
	if err != nil {
		return nil, errors.Join(err, tracing.Shutdown(ctx))
	}
	if g.runtime != "sandbox" && g.runtime != "local" {
		return nil, errors.Join(fmt.Errorf("--runtime %q: use sandbox or local", g.runtime), tracing.Shutdown(ctx))
	}
	cfg, err := llm.LoadConfig(g.config)
	if err != nil {
		return nil, errors.Join(err, tracing.Shutdown(ctx))
	}
	lock, err := g.readLock()
	if err != nil {
		return nil, errors.Join(err, tracing.Shutdown(ctx))
	}
	clients := llm.NewClients(cfg, os.Getenv)
	h := host.New(host.Options{Logger: g.logger, Tracing: tracing, Metrics: metrics, LLMs: clients, Runtime: g.runtime, Lock: lock})
	for _, d := range h.Discover(roots) {
		fmt.Fprintln(stderr, d.String())
	}
	return &session{Host: h, tracing: tracing, metrics: metrics, llm: cfg, clients: clients}, nil
}

// readLock reads the lock file that pins binaries: --lock, else
// nexus.lock in the working directory if there is one.
func (g *globals) readLock() (*integrity.Lock, error) {
	path := g.lock
	if path == "" {
		if _, err := os.Stat(integrity.LockFileName); err != nil {
			return nil, nil
		}
		path = integrity.LockFileName
	}
	return integrity.Read(path)
}

// Close stops the plugins (which flush their spans), then flushes the
// exporters.
func (s *session) Close() error {
	herr := s.Host.Close()
	s.clients.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return errors.Join(herr, s.tracing.Shutdown(ctx), s.metrics.Shutdown(ctx))
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
