// Command react is a Nexus agent plugin serving the agent react: it solves
// an instance by LLM tool calling through the host. It offers the LLM every
// tool the plugin is granted, runs the calls the LLM asks for, feeds back
// the results, and stops when the LLM gives a final answer or after a
// bounded number of steps.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

// maxSteps bounds the LLM round trips of one instance, so a model that
// keeps calling tools cannot loop forever.
const maxSteps = 12

const system = `You solve one problem. Use the tools when they help; call one tool at a time if you are unsure.
When you are done, reply with only the final answer as a JSON object and nothing else.
If the problem shows the answer's shape (a "reference" field is never shown to you), follow the task's instructions; for a numeric answer use {"answer": <number>}.`

// solve runs the tool-calling loop on one instance.
func solve(ctx context.Context, inst map[string]json.RawMessage) (json.RawMessage, error) {
	host, err := sdk.HostFrom(ctx)
	if err != nil {
		return nil, err
	}
	tools, err := host.Tools(ctx)
	if err != nil {
		return nil, err
	}
	defs := make([]sdk.ToolDef, 0, len(tools))
	byFunc := map[string]string{}
	for _, t := range tools {
		// Function names may not contain "/".
		fn := strings.ReplaceAll(t.Name, "/", "__")
		byFunc[fn] = t.Name
		defs = append(defs, sdk.ToolDef{Name: fn, Description: t.Description, Parameters: t.InputSchema})
	}
	msgs := []sdk.Message{
		{Role: sdk.RoleSystem, Content: system},
		{Role: sdk.RoleUser, Content: prompt(inst)},
	}
	for step := 1; step <= maxSteps; step++ {
		resp, err := host.LLM("").Chat(ctx, sdk.ChatRequest{Messages: msgs, Tools: defs})
		if err != nil {
			return nil, err
		}
		msg := resp.Message
		msgs = append(msgs, msg)
		if len(msg.ToolCalls) == 0 {
			return final(msg.Content), nil
		}
		for _, tc := range msg.ToolCalls {
			msgs = append(msgs, sdk.Message{Role: sdk.RoleTool, ToolCallID: tc.ID, Content: runTool(ctx, host, byFunc, tc)})
		}
	}
	return nil, sdk.Errorf("step_limit", "no final answer after %d LLM steps: the model kept calling tools", maxSteps)
}

// runTool calls one tool and returns what the model should read: the
// output, or the error, so the model can correct itself.
func runTool(ctx context.Context, host *sdk.Host, byFunc map[string]string, tc sdk.ToolCall) string {
	name, ok := byFunc[tc.Name]
	if !ok {
		return fmt.Sprintf("error: there is no tool %q", tc.Name)
	}
	out, err := host.CallTool(ctx, name, tc.Arguments, nil)
	if err != nil {
		return "error: " + err.Error()
	}
	return string(out)
}

// prompt is the problem as the model reads it: the instance's question,
// prompt or instructions, else the instance without its reference.
func prompt(inst map[string]json.RawMessage) string {
	for _, k := range []string{"question", "prompt", "instructions"} {
		var s string
		if json.Unmarshal(inst[k], &s) == nil && s != "" {
			return s
		}
	}
	delete(inst, "reference")
	b, _ := json.Marshal(inst)
	return string(b)
}

// final turns the model's last message into the agent's output: the JSON
// object it wrote (possibly inside a code fence), else {"answer": text}.
func final(content string) json.RawMessage {
	s := strings.TrimSpace(content)
	s = strings.TrimPrefix(strings.TrimPrefix(s, "```json"), "```")
	s = strings.TrimSpace(strings.TrimSuffix(s, "```"))
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(s), &obj) == nil {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(map[string]string{"answer": content})
	return b
}

func main() {
	sdk.Serve(sdk.Plugin{
		Name: "react", Version: "0.1.0",
		Description: "An agent that solves instances by LLM tool calling",
		Grants:      manifest.Grants{LLM: []string{"*"}, Tools: []string{"*"}},
	}, sdk.Agent("react", "Solves an instance by LLM tool calling through the host (bounded steps)", solve, sdk.WithTags("llm")))
}
