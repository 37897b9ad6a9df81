// Command spanspam is a hostile test plugin. It does not use the sdk's
// tracing: it implements wire.Server itself, and its one tool, when the
// host offers a HostService, sends the host bad span batches before it
// answers: malformed batches (ids of the wrong size), oversized ones (more
// spans than hostsvc.MaxSpansPerExport) and ones reporting dropped spans,
// each several times. The host must drop them with rate-limited warnings
// and the call must still succeed.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
	"github.com/nexus-eval/nexus/manifest"
)

// These must match nexus.toml.
const (
	pluginName    = "spanspam"
	pluginVersion = "0.1.0"
	inputSchema   = `{"type":"object","properties":{"repeat":{"type":"integer","minimum":1,"maximum":20}},"required":["repeat"],"additionalProperties":false}`
	outputSchema  = `{"type":"object","properties":{"malformed":{"type":"string"},"oversized":{"type":"string"},"dropped":{"type":"string"},"sent":{"type":"integer"}},"required":["malformed","oversized","dropped","sent"],"additionalProperties":false}`
)

// oversized is one more span than the host accepts in a batch
// (hostsvc.MaxSpansPerExport, not imported so the plugin stays a plain
// wire client).
const oversized = 2048 + 1

// GarbageName names every span this plugin sends; none may reach an
// exporter.
const GarbageName = "spanspam.garbage"

type server struct {
	pluginv1.UnimplementedPluginServiceServer
	pluginv1.UnimplementedToolServiceServer
	pluginv1.UnimplementedAgentServiceServer
	pluginv1.UnimplementedTaskServiceServer

	mu     sync.Mutex
	broker *plugin.GRPCBroker
	conn   *grpc.ClientConn
}

func (s *server) UseBroker(b *plugin.GRPCBroker) {
	s.mu.Lock()
	s.broker = b
	s.mu.Unlock()
}

func (s *server) Describe(context.Context, *pluginv1.DescribeRequest) (*pluginv1.DescribeResponse, error) {
	return &pluginv1.DescribeResponse{
		PluginName:    pluginName,
		PluginVersion: pluginVersion,
		Components: []*pluginv1.Component{wire.ComponentToProto(manifest.KindTool, manifest.Component{
			Name:         "spam",
			Description:  "Sends the host malformed, oversized and dropped-span batches, then succeeds",
			InputSchema:  inputSchema,
			OutputSchema: outputSchema,
			Kind:         manifest.ToolLocal,
			Task:         manifest.TaskForbidden,
		})},
	}, nil
}

func (s *server) Flush(context.Context, *pluginv1.FlushRequest) (*pluginv1.FlushResponse, error) {
	return &pluginv1.FlushResponse{}, nil
}

func (s *server) client(id uint32) (pluginv1.HostServiceClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		conn, err := s.broker.Dial(id)
		if err != nil {
			return nil, err
		}
		s.conn = conn
	}
	return pluginv1.NewHostServiceClient(s.conn), nil
}

// garbage is a span that would be well-formed on its own.
func garbage(i int) *pluginv1.Span {
	now := time.Now().UnixNano()
	tid := make([]byte, 16)
	sid := make([]byte, 8)
	tid[0], tid[15] = 0xab, byte(i)
	sid[0], sid[7] = 0xcd, byte(i)
	return &pluginv1.Span{TraceId: tid, SpanId: sid, Name: GarbageName, StartUnixNano: now, EndUnixNano: now + 1000, TraceFlags: 1}
}

func (s *server) Call(ctx context.Context, req *pluginv1.CallRequest) (*pluginv1.CallResponse, error) {
	if req.GetName() != "spam" {
		return &pluginv1.CallResponse{Error: &pluginv1.Error{Code: "not_found", Message: req.GetName()}}, nil
	}
	var in struct{ Repeat int }
	if err := json.Unmarshal(req.GetInput(), &in); err != nil {
		return &pluginv1.CallResponse{Error: &pluginv1.Error{Code: "invalid_input", Message: err.Error()}}, nil
	}
	out := map[string]any{"malformed": "not sent", "oversized": "not sent", "dropped": "not sent", "sent": 0}
	if id := req.GetHostServiceId(); id != 0 {
		c, err := s.client(id)
		if err != nil {
			return &pluginv1.CallResponse{Error: &pluginv1.Error{Code: "no_host_service", Message: err.Error()}}, nil
		}
		// A good-looking span first, so the whole batch must be refused,
		// not just the bad span.
		malformed := []*pluginv1.Span{garbage(1), {TraceId: []byte{1, 2, 3}, SpanId: []byte{4}, Name: GarbageName}}
		big := make([]*pluginv1.Span, oversized)
		for i := range big {
			big[i] = garbage(i)
		}
		batches := []struct {
			key string
			req *pluginv1.ExportSpansRequest
		}{
			{"malformed", &pluginv1.ExportSpansRequest{Spans: malformed}},
			{"oversized", &pluginv1.ExportSpansRequest{Spans: big}},
			{"dropped", &pluginv1.ExportSpansRequest{Dropped: 7}},
		}
		sent := 0
		for range in.Repeat {
			for _, b := range batches {
				_, err := c.ExportSpans(ctx, b.req)
				out[b.key] = status.Code(err).String()
				sent++
			}
		}
		out["sent"] = sent
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return &pluginv1.CallResponse{Output: b}, nil
}

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "spanspam: a test plugin; the host starts it")
		os.Exit(2)
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.PluginSets(&server{}),
		GRPCServer:       plugin.DefaultGRPCServer,
		Logger:           hclog.New(&hclog.LoggerOptions{Level: hclog.Warn, Output: os.Stderr, JSONFormat: true}),
	})
}

var _ wire.Server = (*server)(nil)
