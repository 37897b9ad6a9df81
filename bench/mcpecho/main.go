// Command mcpecho is the MCP peer the benchmarks measure Nexus against: an
// MCP server over stdio, written with the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) the way its examples do, serving
// one typed echo tool. Like the Nexus and stock go-plugin echo tools, it
// decodes its JSON arguments into a struct and encodes the struct back.
//
// Run with -bare it exits right after the runtime and package init: the
// bare start of this binary, the baseline its cold start is measured
// against.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type msg struct {
	Text string `json:"text" jsonschema:"text to echo back"`
}

func echo(_ context.Context, _ *mcp.CallToolRequest, in msg) (*mcp.CallToolResult, msg, error) {
	return nil, in, nil
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-bare" {
		return
	}
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpecho", Version: "0.1.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echoes its input"}, echo)
	if err := server.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpecho:", err)
		os.Exit(1)
	}
}
