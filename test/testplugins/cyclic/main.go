// Command cyclic is a hostile test plugin whose tools declare JSON Schemas
// that refer to themselves without consuming input ($ref cycles), which a
// naive validator follows forever; plain declares a legitimately recursive
// schema (a tree) that must keep working.
package main

import (
	"context"
	"encoding/json"

	"github.com/nexus-eval/nexus/sdk"
)

type Empty struct{}

func echo(_ context.Context, in json.RawMessage) (Empty, error) { return Empty{}, nil }

func main() {
	sdk.Serve(sdk.Plugin{Name: "cyclic", Version: "0.1.0", Description: "Declares self-referential schemas"},
		sdk.Tool("self", "Input schema is {\"$ref\": \"#\"}", echo, sdk.InputSchema(`{"$ref":"#"}`)),
		sdk.Tool("pair", "Input schema is a two-step $ref cycle", echo,
			sdk.InputSchema(`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`)),
		sdk.Tool("tree", "Input schema is a recursive tree, consuming input at each step", echo,
			sdk.InputSchema(`{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}},"additionalProperties":false}`)),
	)
}
