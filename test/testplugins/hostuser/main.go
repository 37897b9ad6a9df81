// Command hostuser is a test plugin that uses every per-call host service:
// another tool, shared state, an LLM, and its environment, so tests can
// check grants, the trajectory and the environment a plugin sees.
package main

import (
	"context"
	"encoding/json"
	"os"

	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

type Expr struct {
	Expression string `json:"expression"`
}

type Name struct {
	Name string `json:"name"`
}

type KV struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type Text struct {
	Text string `json:"text"`
}

type Answer struct {
	Content string    `json:"content"`
	Usage   sdk.Usage `json:"usage"`
}

func host(ctx context.Context) (*sdk.Host, error) { return sdk.HostFrom(ctx) }

func calc(ctx context.Context, in Expr) (json.RawMessage, error) {
	h, err := host(ctx)
	if err != nil {
		return nil, err
	}
	return h.CallTool(ctx, "math/calculator", in, nil)
}

func forbidden(ctx context.Context, in Text) (json.RawMessage, error) {
	h, err := host(ctx)
	if err != nil {
		return nil, err
	}
	return h.CallTool(ctx, "echo/echo", in, nil)
}

func remember(ctx context.Context, in KV) (KV, error) {
	h, err := host(ctx)
	if err != nil {
		return KV{}, err
	}
	if err := h.SetState(ctx, in.Key, in.Value); err != nil {
		return KV{}, err
	}
	var got string
	if _, err := h.GetState(ctx, in.Key, &got); err != nil {
		return KV{}, err
	}
	return KV{Key: in.Key, Value: got}, nil
}

func ask(ctx context.Context, in Text) (Answer, error) {
	h, err := host(ctx)
	if err != nil {
		return Answer{}, err
	}
	resp, err := h.LLM("default").Chat(ctx, sdk.ChatRequest{Messages: []sdk.Message{{Role: sdk.RoleUser, Content: in.Text}}})
	if err != nil {
		return Answer{}, err
	}
	return Answer{Content: resp.Message.Content, Usage: resp.Usage}, nil
}

func env(_ context.Context, in Name) (Text, error) { return Text{Text: os.Getenv(in.Name)}, nil }

func main() {
	sdk.Serve(sdk.Plugin{
		Name: "hostuser", Version: "0.1.0", Description: "Test plugin using host services",
		Grants: manifest.Grants{
			LLM:   []string{"default"},
			Tools: []string{"math/calculator"},
			State: true,
			Env:   []string{"NEXUS_TEST_GRANTED"},
		},
	},
		sdk.Tool("calc", "Calls math/calculator through the host", calc),
		sdk.Tool("forbidden", "Calls echo/echo, which it is not granted", forbidden),
		sdk.Tool("remember", "Writes then reads shared state", remember),
		sdk.Tool("ask", "Asks the default LLM", ask),
		sdk.Tool("env", "Returns one of its environment variables", env),
	)
}
