package sdk

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"go.opentelemetry.io/otel/attribute"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// ManifestFlag makes a plugin binary print its own nexus.toml and exit.
const ManifestFlag = "--nexus-manifest"

// Plugin names the binary's plugin.
type Plugin struct {
	Name        string
	Version     string
	Description string
	// Grants asks for host services and host resources; the manifest
	// records them and the host enforces them.
	Grants manifest.Grants
}

// Serve serves the components until the host disconnects; call it from
// main. Run with [ManifestFlag] the binary prints its manifest instead.
// Serve exits the process on a setup error (duplicate names, a type without
// a JSON Schema) so a broken plugin fails at once, not on first use.
func Serve(p Plugin, components ...*Component) {
	srv, err := newServer(p, components)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == ManifestFlag {
		if err := writeManifest(os.Stdout, srv.manifest(filepath.Base(os.Args[0]))); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", p.Name, err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue {
		applyProcs()
		go exitWithParent(os.Getppid())
		// The host asks the kernel to send SIGTERM when it dies.
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; exitWithGroup() }()
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(srv),
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           Logger(),
	})
}

// Logger returns the plugin's logger. Its output reaches the host log under
// the plugin's name; inside a call prefer [Log], which adds the trace ids.
func Logger() hclog.Logger { return logger() }

var logger = sync.OnceValue(func() hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Level:      hclog.Trace,
		Output:     os.Stderr,
		JSONFormat: true,
	})
})

// applyProcs sets GOMAXPROCS as the host asks (wire.ProcsEnv). A plugin
// mostly waits on its connection, and one P serves a call with less
// scheduling than several; the variable is removed so that programs the
// plugin starts use every core.
func applyProcs() {
	if n, err := strconv.Atoi(os.Getenv(wire.ProcsEnv)); err == nil && n > 0 {
		goruntime.GOMAXPROCS(n)
	}
	os.Unsetenv(wire.ProcsEnv)
}

// exitWithParent is the second line of defence against orphans: the host
// also asks the kernel to signal its plugins when it dies.
func exitWithParent(ppid int) {
	for range time.Tick(500 * time.Millisecond) {
		if os.Getppid() != ppid {
			exitWithGroup()
		}
	}
}

// exitWithGroup ends the plugin and every process it started: the host
// makes each plugin the leader of its own process group, so its children
// (and theirs) go too.
func exitWithGroup() {
	if pgid, err := syscall.Getpgid(0); err == nil && pgid == os.Getpid() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	os.Exit(2)
}

func writeManifest(w io.Writer, m *manifest.Manifest) error {
	b, err := manifest.Encode(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	_, err = w.Write(b)
	return err
}

// server implements the v1 services over a set of components.
type server struct {
	pluginv1.UnimplementedPluginServiceServer
	pluginv1.UnimplementedToolServiceServer
	pluginv1.UnimplementedAgentServiceServer
	pluginv1.UnimplementedTaskServiceServer

	info       Plugin
	components []*Component
	byKind     map[manifest.Kind]map[string]*Component
	describe   *pluginv1.DescribeResponse
	host       *hostConn
	tel        *telemetry
}

func newServer(p Plugin, components []*Component) (*server, error) {
	s := &server{info: p, components: components, byKind: map[manifest.Kind]map[string]*Component{}, host: &hostConn{}}
	s.tel = newTelemetry(s.host)
	s.describe = &pluginv1.DescribeResponse{PluginName: p.Name, PluginVersion: p.Version}
	for _, c := range components {
		if c.err != nil {
			return nil, c.err
		}
		m := s.byKind[c.kind]
		if m == nil {
			m = map[string]*Component{}
			s.byKind[c.kind] = m
		}
		if _, dup := m[c.entry.Name]; dup {
			return nil, fmt.Errorf("%s %q is served twice: give each %s its own name", c.kind, c.entry.Name, c.kind)
		}
		m[c.entry.Name] = c
		s.describe.Components = append(s.describe.Components, wire.ComponentToProto(c.kind, c.entry))
	}
	return s, nil
}

func (s *server) manifest(binary string) *manifest.Manifest {
	m := &manifest.Manifest{
		Schema: manifest.SchemaVersion,
		Plugin: manifest.Plugin{
			Name:        s.info.Name,
			Version:     s.info.Version,
			Description: s.info.Description,
			Binary:      binary,
			Protocols:   wire.Protocols,
			Grants:      s.info.Grants,
		},
	}
	for _, c := range s.components {
		switch c.kind {
		case manifest.KindTool:
			m.Tools = append(m.Tools, c.entry)
		case manifest.KindAgent:
			m.Agents = append(m.Agents, c.entry)
		case manifest.KindTask:
			m.Tasks = append(m.Tasks, c.entry)
		}
	}
	return m
}

func (s *server) lookup(kind manifest.Kind, name string) (*Component, *pluginv1.Error) {
	if c, ok := s.byKind[kind][name]; ok {
		return c, nil
	}
	return nil, &pluginv1.Error{Code: "not_found", Message: fmt.Sprintf("plugin %q serves no %s %q", s.info.Name, kind, name)}
}

func (s *server) UseBroker(b *plugin.GRPCBroker) { s.host.setBroker(b) }

func (s *server) Describe(_ context.Context, req *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	if id := req.GetHostServiceId(); id != 0 {
		// Connect now: the broker withdraws an offer not taken within a
		// few seconds, and the first call needing the host may come much
		// later.
		s.host.use(id)
		go s.host.get()
	}
	return s.describe, nil
}

func (s *server) Flush(ctx context.Context, req *pluginv1.FlushRequest) (*pluginv1.FlushResponse, error) {
	s.host.use(req.GetHostServiceId())
	return &pluginv1.FlushResponse{}, s.tel.queue.ForceFlush(ctx)
}

// span starts the plugin-side span of one call.
func (s *server) span(ctx context.Context, op, name string, hostID uint32) (context.Context, func(error)) {
	return s.tel.start(ctx, "plugin."+op, hostID,
		attribute.String("nexus.component.name", name),
		attribute.String("nexus.plugin.name", s.info.Name),
		attribute.String("nexus.plugin.version", s.info.Version))
}

func (s *server) Call(ctx context.Context, req *pluginv1.CallRequest) (*pluginv1.CallResponse, error) {
	c, perr := s.lookup(manifest.KindTool, req.GetName())
	if perr != nil {
		return &pluginv1.CallResponse{Error: perr}, nil
	}
	ctx, end := s.span(s.withHost(ctx, req.GetHostServiceId()), "tool.call", req.GetName(), req.GetHostServiceId())
	out, err := guard(func() ([]byte, error) { return c.call(ctx, req.GetInput()) })
	end(err)
	return &pluginv1.CallResponse{Output: out, Error: toProtoError(err)}, nil
}

func (s *server) Run(ctx context.Context, req *pluginv1.RunRequest) (*pluginv1.RunResponse, error) {
	c, perr := s.lookup(manifest.KindAgent, req.GetName())
	if perr != nil {
		return &pluginv1.RunResponse{Error: perr}, nil
	}
	ctx, end := s.span(s.withHost(ctx, req.GetHostServiceId()), "agent.run", req.GetName(), req.GetHostServiceId())
	out, err := guard(func() ([]byte, error) { return c.call(ctx, req.GetInput()) })
	end(err)
	return &pluginv1.RunResponse{Output: out, Error: toProtoError(err)}, nil
}

func (s *server) ListInstances(req *pluginv1.ListInstancesRequest, stream pluginv1.TaskService_ListInstancesServer) error {
	c, perr := s.lookup(manifest.KindTask, req.GetName())
	if perr != nil {
		return stream.Send(&pluginv1.ListInstancesResponse{Item: &pluginv1.ListInstancesResponse_Error{Error: perr}})
	}
	var sendErr error
	ctx, end := s.span(s.withHost(stream.Context(), req.GetHostServiceId()), "task.instances", req.GetName(), req.GetHostServiceId())
	_, err := guard(func() ([]byte, error) {
		return nil, c.task.instances(ctx, req.GetArgs(), func(id string, data []byte) error {
			sendErr = stream.Send(&pluginv1.ListInstancesResponse{Item: &pluginv1.ListInstancesResponse_Instance{
				Instance: &pluginv1.Instance{Id: id, Data: data},
			}})
			return sendErr
		})
	})
	end(err)
	switch {
	case sendErr != nil:
		return sendErr
	case err != nil:
		return stream.Send(&pluginv1.ListInstancesResponse{Item: &pluginv1.ListInstancesResponse_Error{Error: toProtoError(err)}})
	}
	return nil
}

func (s *server) Evaluate(ctx context.Context, req *pluginv1.EvaluateRequest) (*pluginv1.EvaluateResponse, error) {
	c, perr := s.lookup(manifest.KindTask, req.GetName())
	if perr != nil {
		return &pluginv1.EvaluateResponse{Error: perr}, nil
	}
	ctx, end := s.span(s.withHost(ctx, req.GetHostServiceId()), "task.evaluate", req.GetName(), req.GetHostServiceId())
	var res Result
	details, err := guard(func() ([]byte, error) {
		var err error
		res, err = c.task.evaluate(ctx, req.GetArgs(), req.GetInstance().GetData(), req.GetOutput())
		if err != nil || res.Details == nil {
			return nil, err
		}
		return marshal(res.Details, "evaluation details")
	})
	end(err)
	if err != nil {
		return &pluginv1.EvaluateResponse{Error: toProtoError(err)}, nil
	}
	return &pluginv1.EvaluateResponse{Score: res.Score, Passed: res.Passed, Details: details}, nil
}

// guard runs a handler and turns a panic into a domain error, so one bad
// input cannot take the whole plugin (and every other call on it) down.
func guard(fn func() ([]byte, error)) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			Logger().Error("handler panicked", "panic", r, "stack", string(debug.Stack()))
			out, err = nil, Errorf(CodePanic, "handler panicked: %v", r)
		}
	}()
	return fn()
}

func toProtoError(err error) *pluginv1.Error {
	if err == nil {
		return nil
	}
	e := asError(err)
	return &pluginv1.Error{Code: e.Code, Message: e.Message}
}

var _ wire.Server = (*server)(nil)
