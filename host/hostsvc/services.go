package hostsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/host/registry"
	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
)

// Tools is the host's tool registry as host services need it.
type Tools interface {
	Lookup(name string) (registry.Meta, error)
	Get(ctx context.Context, name string) (component.Tool, error)
	List() []registry.Meta
}

// Error codes of per-call services.
const (
	CodePermissionDenied = "permission_denied"
	CodeNoExecution      = "no_execution"
	CodeInvalidArgument  = "invalid_argument"
	CodeUnavailable      = "unavailable"
)

func domainErr(code, format string, args ...any) *pluginv1.Error {
	return &pluginv1.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// denied says which grant the plugin lacks and where to add it.
func (s *Server) denied(what, grant string) *pluginv1.Error {
	return domainErr(CodePermissionDenied,
		"permission denied: plugin %q may not %s: add %s to [plugin.grants] in %s (granted: %s)",
		s.plugin, what, grant, s.manifestPath(), s.grants.String())
}

func (s *Server) manifestPath() string {
	if s.manifest == nil {
		return "its manifest"
	}
	return s.manifest.Path
}

// acting returns the execution of the call ctx acts for, and ctx made
// ready to act for it (the plugin's trace, the execution attached).
func (s *Server) acting(ctx context.Context) (context.Context, *execution.Execution, *pluginv1.Error) {
	if s.calls == nil {
		return nil, nil, domainErr(CodeNoExecution, "this host offers no per-call services")
	}
	cl, err := s.calls.lookup(ctx, s.plugin)
	if err != nil {
		return nil, nil, domainErr(CodeNoExecution, "%v", err)
	}
	return execution.With(wire.ExtractTrace(ctx), cl.exec), cl.exec, nil
}

// Chat completes a chat with one of the execution's LLM clients.
func (s *Server) Chat(ctx context.Context, req *pluginv1.ChatRequest) (*pluginv1.ChatResponse, error) {
	ctx, exec, perr := s.acting(ctx)
	if perr != nil {
		return &pluginv1.ChatResponse{Error: perr}, nil
	}
	name := req.GetLlm()
	if name == "" {
		name = exec.Options().LLM
	}
	if name == "" {
		return &pluginv1.ChatResponse{Error: domainErr(CodeInvalidArgument, "no LLM named and the execution has no default: name one, or run with --llm NAME")}, nil
	}
	if !s.grants.AllowsLLM(name) {
		return &pluginv1.ChatResponse{Error: s.denied(fmt.Sprintf("use LLM %q", name), fmt.Sprintf("llm = [%q]", name))}, nil
	}
	var creq llm.ChatRequest
	if err := json.Unmarshal(req.GetRequest(), &creq); err != nil {
		return &pluginv1.ChatResponse{Error: domainErr(CodeInvalidArgument, "chat request is not valid JSON: %v", err)}, nil
	}
	client, err := exec.LLM(name)
	if err != nil {
		return &pluginv1.ChatResponse{Error: domainErr(CodeInvalidArgument, "%v", err)}, nil
	}
	start := time.Now()
	resp, err := client.Chat(ctx, creq)
	step := execution.Step{Kind: "llm", Name: name, Plugin: s.plugin, Input: req.GetRequest(), StartedAt: start, Duration: time.Since(start)}
	if err != nil {
		step.Error = err.Error()
		exec.Record(step)
		return &pluginv1.ChatResponse{Error: domainErr(CodeUnavailable, "%v", err)}, nil
	}
	out, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}
	step.Output, step.Usage = out, resp.Usage
	exec.Record(step)
	return &pluginv1.ChatResponse{Response: out}, nil
}

// CallTool calls a tool through the host's registry, so it is validated,
// traced and, for a runtime tool, run in the same execution's runtime.
func (s *Server) CallTool(ctx context.Context, req *pluginv1.CallToolRequest) (*pluginv1.CallToolResponse, error) {
	ctx, exec, perr := s.acting(ctx)
	if perr != nil {
		return &pluginv1.CallToolResponse{Error: perr}, nil
	}
	meta, err := s.tools.Lookup(req.GetName())
	if err != nil {
		return &pluginv1.CallToolResponse{Error: domainErr(CodeInvalidArgument, "%v", err)}, nil
	}
	if !s.grants.AllowsTool(meta.Plugin, meta.Name()) {
		return &pluginv1.CallToolResponse{Error: s.denied(fmt.Sprintf("call tool %q", meta.Qualified()), fmt.Sprintf("tools = [%q]", meta.Qualified()))}, nil
	}
	start := time.Now()
	out, err := s.callTool(ctx, meta.Qualified(), req.GetInput())
	step := execution.Step{Kind: "tool", Name: meta.Qualified(), Plugin: s.plugin, Input: req.GetInput(), Output: out, StartedAt: start, Duration: time.Since(start)}
	if err != nil {
		step.Error = err.Error()
	}
	exec.Record(step)
	if err != nil {
		code := "tool_error"
		var ce *component.Error
		if errors.As(err, &ce) {
			code = ce.Code
		}
		return &pluginv1.CallToolResponse{Error: domainErr(code, "%v", err)}, nil
	}
	return &pluginv1.CallToolResponse{Output: out}, nil
}

func (s *Server) callTool(ctx context.Context, name string, input []byte) (json.RawMessage, error) {
	tool, err := s.tools.Get(ctx, name)
	if err != nil {
		return nil, err
	}
	return tool.Call(ctx, input)
}

// ListTools lists the tools the plugin may call.
func (s *Server) ListTools(ctx context.Context, _ *pluginv1.ListToolsRequest) (*pluginv1.ListToolsResponse, error) {
	if _, _, perr := s.acting(ctx); perr != nil {
		return &pluginv1.ListToolsResponse{Error: perr}, nil
	}
	resp := &pluginv1.ListToolsResponse{}
	for _, m := range s.tools.List() {
		if s.grants.AllowsTool(m.Plugin, m.Name()) {
			resp.Tools = append(resp.Tools, &pluginv1.ToolInfo{
				Name: m.Qualified(), Description: m.Component.Description,
				InputSchema: []byte(m.Component.InputSchema), OutputSchema: []byte(m.Component.OutputSchema),
			})
		}
	}
	return resp, nil
}

// GetState reads the execution's shared tool state.
func (s *Server) GetState(ctx context.Context, req *pluginv1.GetStateRequest) (*pluginv1.GetStateResponse, error) {
	_, exec, perr := s.acting(ctx)
	if perr != nil {
		return &pluginv1.GetStateResponse{Error: perr}, nil
	}
	if !s.grants.State {
		return &pluginv1.GetStateResponse{Error: s.denied("read tool state", "state = true")}, nil
	}
	v, ok := exec.State().Get(req.GetKey())
	return &pluginv1.GetStateResponse{Value: v, Found: ok}, nil
}

// SetState writes the execution's shared tool state.
func (s *Server) SetState(ctx context.Context, req *pluginv1.SetStateRequest) (*pluginv1.SetStateResponse, error) {
	_, exec, perr := s.acting(ctx)
	if perr != nil {
		return &pluginv1.SetStateResponse{Error: perr}, nil
	}
	if !s.grants.State {
		return &pluginv1.SetStateResponse{Error: s.denied("write tool state", "state = true")}, nil
	}
	if v := req.GetValue(); len(v) > 0 && !json.Valid(v) {
		return &pluginv1.SetStateResponse{Error: domainErr(CodeInvalidArgument, "state value for %q is not valid JSON", req.GetKey())}, nil
	}
	exec.State().Set(req.GetKey(), req.GetValue())
	return &pluginv1.SetStateResponse{}, nil
}
