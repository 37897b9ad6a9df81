// This file is the host side of the stock go-plugin baseline: plain
// plugin.NewClient, Client, Dispense, with no Nexus host code, as a
// go-plugin user would write it.
package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/nexus-eval/nexus/bench/internal/stockwire"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
)

// echoInput is what every echo call sends; both plugins must return it
// byte for byte.
var echoInput = []byte(`{"text":"hello"}`)

// newStockClient returns a go-plugin client for the stockecho binary;
// nothing starts until Client is called. It is Managed, so the signal
// handler's cleanup reaches it.
func newStockClient(bin string) *plugin.Client {
	return plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  stockwire.Handshake,
		Plugins:          stockwire.Plugins(nil),
		Cmd:              command(bin),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           hclog.NewNullLogger(),
		Managed:          true,
	})
}

func init() { onExit(plugin.CleanupClients) }

// dispenseStock returns the echo tool client of a started client.
func dispenseStock(rpc plugin.ClientProtocol) (pluginv1.ToolServiceClient, error) {
	raw, err := rpc.Dispense(stockwire.Key)
	if err != nil {
		return nil, err
	}
	tool, ok := raw.(pluginv1.ToolServiceClient)
	if !ok {
		return nil, fmt.Errorf("dispensed %T, want a ToolServiceClient", raw)
	}
	return tool, nil
}

// startStock launches the stock plugin and returns its tool and a
// function that kills it.
func startStock(bin string) (pluginv1.ToolServiceClient, func(), error) {
	c := newStockClient(bin)
	stop := onExit(c.Kill)
	rpc, err := c.Client()
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("stock go-plugin: %w", err)
	}
	tool, err := dispenseStock(rpc)
	if err != nil {
		stop()
		return nil, nil, fmt.Errorf("stock go-plugin: %w", err)
	}
	return tool, stop, nil
}

// stockCall makes one echo call and checks the answer.
func stockCall(ctx context.Context, tool pluginv1.ToolServiceClient) error {
	resp, err := tool.Call(ctx, &pluginv1.CallRequest{Name: "echo", Input: echoInput})
	if err != nil {
		return fmt.Errorf("stock call: %w", err)
	}
	if e := resp.GetError(); e != nil {
		return fmt.Errorf("stock call: %s: %s", e.GetCode(), e.GetMessage())
	}
	if !bytes.Equal(resp.GetOutput(), echoInput) {
		return fmt.Errorf("stock call returned %q, want %q", resp.GetOutput(), echoInput)
	}
	return nil
}
