package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/grpc/metadata"

	pluginv1 "github.com/nexus-eval/nexus/internal/pb/nexus/plugin/v1"
	"github.com/nexus-eval/nexus/internal/wire"
)

// callMetadata names the call a request to the host acts for; the host
// sends it with every call made within an execution.
const callMetadata = "nexus-call"

// ErrNoHost: the handler's context offers no host services (the call was
// made outside an execution, or the host serves none).
var ErrNoHost = errors.New("no host services in this call")

// Host is what the host offers a handler for the duration of one call:
// LLM clients, other tools, shared state. Each is limited to what the
// plugin's manifest grants ([plugin.grants]); a denied request fails with
// an *Error whose Code is "permission_denied".
type Host struct {
	conn  *hostConn
	token string
}

type hostKey struct{}

// HostFrom returns the host services of the call ctx belongs to. Use the
// handler's own context (or one derived from it).
func HostFrom(ctx context.Context) (*Host, error) {
	h, ok := ctx.Value(hostKey{}).(*Host)
	if !ok || h.token == "" {
		return nil, fmt.Errorf("%w: host services need a call made within an execution (a run, or `nexus-host call`)", ErrNoHost)
	}
	return h, nil
}

// withHost attaches the call's host services to a handler's context.
func (s *server) withHost(ctx context.Context, hostID uint32) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	tokens := md.Get(callMetadata)
	if len(tokens) == 0 {
		return ctx
	}
	s.host.use(hostID)
	return context.WithValue(ctx, hostKey{}, &Host{conn: s.host, token: tokens[0]})
}

// client returns the HostService client and ctx carrying the call token
// and the trace.
func (h *Host) client(ctx context.Context) (context.Context, pluginv1.HostServiceClient, error) {
	c := h.conn.get()
	if c == nil {
		return nil, nil, fmt.Errorf("%w: the host service cannot be reached", ErrNoHost)
	}
	ctx = metadata.AppendToOutgoingContext(wire.InjectTrace(ctx), callMetadata, h.token)
	return ctx, c, nil
}

func fromProtoError(e *pluginv1.Error) error {
	if e == nil {
		return nil
	}
	return &Error{Code: e.GetCode(), Message: e.GetMessage()}
}

// LLM returns the host's LLM client called name; "" is the execution's
// default (`nexus-host run --llm NAME`).
func (h *Host) LLM(name string) *LLM { return &LLM{host: h, name: name} }

// LLM is one of the host's LLM clients.
type LLM struct {
	host *Host
	name string
}

// Chat asks the LLM for a chat completion. The host records the call and
// its token usage in the execution's trajectory.
func (l *LLM) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	ctx, c, err := l.host.client(ctx)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode chat request: %w", err)
	}
	resp, err := c.Chat(ctx, &pluginv1.ChatRequest{Llm: l.name, Request: body})
	if err != nil {
		return nil, fmt.Errorf("llm %q: %w", l.name, err)
	}
	if err := fromProtoError(resp.GetError()); err != nil {
		return nil, err
	}
	var out ChatResponse
	if err := json.Unmarshal(resp.GetResponse(), &out); err != nil {
		return nil, fmt.Errorf("llm %q: decode response: %w", l.name, err)
	}
	return &out, nil
}

// CallTool calls another tool through the host (validated, traced, and
// for a runtime tool run in this execution's runtime). in is encoded as
// JSON; the output is decoded into out unless out is nil. The raw output
// is returned too.
func (h *Host) CallTool(ctx context.Context, name string, in, out any) (json.RawMessage, error) {
	ctx, c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	input, ok := in.(json.RawMessage)
	if !ok {
		if input, err = json.Marshal(in); err != nil {
			return nil, fmt.Errorf("tool %q: encode input: %w", name, err)
		}
	}
	resp, err := c.CallTool(ctx, &pluginv1.CallToolRequest{Name: name, Input: input})
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	if err := fromProtoError(resp.GetError()); err != nil {
		return nil, err
	}
	if out != nil {
		if err := json.Unmarshal(resp.GetOutput(), out); err != nil {
			return resp.GetOutput(), fmt.Errorf("tool %q: decode output: %w", name, err)
		}
	}
	return resp.GetOutput(), nil
}

// GetState reads key of the execution's shared state into v and reports
// whether it was set.
func (h *Host) GetState(ctx context.Context, key string, v any) (bool, error) {
	ctx, c, err := h.client(ctx)
	if err != nil {
		return false, err
	}
	resp, err := c.GetState(ctx, &pluginv1.GetStateRequest{Key: key})
	if err != nil {
		return false, fmt.Errorf("state %q: %w", key, err)
	}
	if err := fromProtoError(resp.GetError()); err != nil {
		return false, err
	}
	if !resp.GetFound() {
		return false, nil
	}
	return true, json.Unmarshal(resp.GetValue(), v)
}

// SetState stores v (as JSON) under key; a nil v deletes the key.
func (h *Host) SetState(ctx context.Context, key string, v any) error {
	ctx, c, err := h.client(ctx)
	if err != nil {
		return err
	}
	var value []byte
	if v != nil {
		if value, err = json.Marshal(v); err != nil {
			return fmt.Errorf("state %q: encode: %w", key, err)
		}
	}
	resp, err := c.SetState(ctx, &pluginv1.SetStateRequest{Key: key, Value: value})
	if err != nil {
		return fmt.Errorf("state %q: %w", key, err)
	}
	return fromProtoError(resp.GetError())
}

// ToolInfo describes a tool the plugin may call.
type ToolInfo struct {
	Name         string
	Description  string
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
}

// Tools lists the tools the plugin is granted, with their schemas.
func (h *Host) Tools(ctx context.Context) ([]ToolInfo, error) {
	ctx, c, err := h.client(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := c.ListTools(ctx, &pluginv1.ListToolsRequest{})
	if err != nil {
		return nil, fmt.Errorf("list tools: %w", err)
	}
	if err := fromProtoError(resp.GetError()); err != nil {
		return nil, err
	}
	out := make([]ToolInfo, 0, len(resp.GetTools()))
	for _, t := range resp.GetTools() {
		out = append(out, ToolInfo{Name: t.GetName(), Description: t.GetDescription(), InputSchema: t.GetInputSchema(), OutputSchema: t.GetOutputSchema()})
	}
	return out, nil
}
