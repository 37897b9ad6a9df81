// Package stockwire is the wire glue of the stock go-plugin echo plugin
// that the benchmarks compare Nexus against: a handshake and a go-plugin
// GRPCPlugin serving the generated ToolService, written the way the
// go-plugin examples do it, with no Nexus SDK or host code.
package stockwire

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

// Handshake is the stock plugin's go-plugin handshake.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "STOCK_ECHO_PLUGIN",
	MagicCookieValue: "stock-echo-benchmark",
}

// Key is the go-plugin name the echo tool is dispensed under.
const Key = "echo"

// Plugin serves Impl on the plugin side; the host side leaves it nil and
// gets a pluginv1.ToolServiceClient from Dispense.
type Plugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl pluginv1.ToolServiceServer
}

// GRPCServer registers the tool service.
func (p *Plugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pluginv1.RegisterToolServiceServer(s, p.Impl)
	return nil
}

// GRPCClient returns a pluginv1.ToolServiceClient over the connection.
func (p *Plugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pluginv1.NewToolServiceClient(c), nil
}

// Plugins is the plugin set for both sides; impl is nil on the host.
func Plugins(impl pluginv1.ToolServiceServer) plugin.PluginSet {
	return plugin.PluginSet{Key: &Plugin{Impl: impl}}
}

var _ plugin.GRPCPlugin = (*Plugin)(nil)
