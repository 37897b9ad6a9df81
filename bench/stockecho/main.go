// Command stockecho is the baseline the benchmarks measure Nexus against:
// a plain hashicorp/go-plugin gRPC plugin serving one echo tool over the
// same generated ToolService messages Nexus uses. Like a Nexus SDK tool it
// decodes its JSON input into a struct and encodes the output, so both
// sides do the same protobuf and JSON work.
package main

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/go-plugin"

	"github.com/nexus-eval/nexus/bench/internal/stockwire"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

type msg struct {
	Text string `json:"text"`
}

type echo struct {
	pluginv1.UnimplementedToolServiceServer
}

func (echo) Call(_ context.Context, req *pluginv1.CallRequest) (*pluginv1.CallResponse, error) {
	var in msg
	if err := json.Unmarshal(req.GetInput(), &in); err != nil {
		return &pluginv1.CallResponse{Error: &pluginv1.Error{Code: "invalid_input", Message: err.Error()}}, nil
	}
	out, err := json.Marshal(in)
	if err != nil {
		return &pluginv1.CallResponse{Error: &pluginv1.Error{Code: "internal", Message: err.Error()}}, nil
	}
	return &pluginv1.CallResponse{Output: out}, nil
}

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: stockwire.Handshake,
		Plugins:         stockwire.Plugins(echo{}),
		GRPCServer:      plugin.DefaultGRPCServer,
	})
}
