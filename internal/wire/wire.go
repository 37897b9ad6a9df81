// Package wire holds what both sides of the go-plugin connection must agree
// on: the handshake, the plugin key, the negotiated protocol versions, and
// the go-plugin glue that registers and dials the v1 gRPC services.
package wire

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

// Handshake is the go-plugin handshake. The cookie only keeps a user from
// running a plugin binary by hand by mistake; it is not a security measure.
// ProtocolVersion is the fallback for plugins that negotiate no version.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "NEXUS_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "d3f8c2a1-nexus-plugin-host",
}

// PluginKey is the go-plugin name under which a binary serves its
// components; one binary serves all of its agents, tools and tasks.
const PluginKey = "nexus"

// ProcsEnv is the variable through which the host sets a plugin's
// GOMAXPROCS (the SDK applies it and hides it from the plugin's children).
const ProcsEnv = "NEXUS_GOMAXPROCS"

// ProtocolV1 is the first wire protocol (proto/nexus/plugin/v1).
const ProtocolV1 = 1

// Protocols lists the wire protocols this build speaks, newest last.
var Protocols = []int{ProtocolV1}

// Server is everything a plugin binary serves under protocol v1.
type Server interface {
	pluginv1.PluginServiceServer
	pluginv1.ToolServiceServer
	pluginv1.AgentServiceServer
	pluginv1.TaskServiceServer
	// UseBroker hands the server the broker it dials the host's
	// HostService through.
	UseBroker(b *plugin.GRPCBroker)
}

// Client is the host's view of one running plugin binary.
type Client struct {
	Plugin pluginv1.PluginServiceClient
	Tool   pluginv1.ToolServiceClient
	Agent  pluginv1.AgentServiceClient
	Task   pluginv1.TaskServiceClient
	Broker *plugin.GRPCBroker
	// Conn is the connection itself, for health checks.
	Conn *grpc.ClientConn
}

// GRPCPlugin adapts the v1 services to go-plugin. The plugin side sets
// Impl; the host side leaves it nil.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Server
}

// GRPCServer registers the v1 services on the plugin's gRPC server.
func (p *GRPCPlugin) GRPCServer(b *plugin.GRPCBroker, s *grpc.Server) error {
	p.Impl.UseBroker(b)
	pluginv1.RegisterPluginServiceServer(s, p.Impl)
	pluginv1.RegisterToolServiceServer(s, p.Impl)
	pluginv1.RegisterAgentServiceServer(s, p.Impl)
	pluginv1.RegisterTaskServiceServer(s, p.Impl)
	return nil
}

// GRPCClient returns a *Client over the plugin's connection.
func (p *GRPCPlugin) GRPCClient(_ context.Context, b *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &Client{
		Plugin: pluginv1.NewPluginServiceClient(c),
		Tool:   pluginv1.NewToolServiceClient(c),
		Agent:  pluginv1.NewAgentServiceClient(c),
		Task:   pluginv1.NewTaskServiceClient(c),
		Broker: b,
		Conn:   c,
	}, nil
}

// PluginSets returns the versioned plugin sets for go-plugin's negotiation;
// srv is nil on the host side.
func PluginSets(srv Server) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{
		ProtocolV1: {PluginKey: &GRPCPlugin{Impl: srv}},
	}
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)
