package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/nexus-eval/nexus/internal/chat"
)

// Client completes chats against one configured LLM. It is safe for
// concurrent use.
type Client interface {
	Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error)
}

// The chat types are shared with the SDK (internal/chat): their JSON form
// is what crosses the plugin boundary.
type (
	ChatRequest  = chat.Request
	Message      = chat.Message
	ToolDef      = chat.ToolDef
	ToolCall     = chat.ToolCall
	ChatResponse = chat.Response
	Usage        = chat.Usage
)

// Roles of a Message.
const (
	RoleSystem    = chat.RoleSystem
	RoleDeveloper = chat.RoleDeveloper
	RoleUser      = chat.RoleUser
	RoleAssistant = chat.RoleAssistant
	RoleTool      = chat.RoleTool
)

// client is a Client for one [llm.NAME] entry.
type client struct {
	name    string
	entry   Entry
	baseURL string // redacted, for messages
	// scrub masks the API key in text bound for errors. The key itself is
	// held only here and in the library's options, never in a field that
	// %v would print.
	scrub     func(string) string
	transport *http.Transport
	chat      openai.ChatCompletionService
}

// New returns the client of the entry called name. getenv (os.Getenv in
// production) supplies the API key from the variable named by api_key_env;
// an unset or empty variable is an ErrNotConfigured error naming it. An
// entry with no api_key_env sends no key (local endpoints).
func New(name string, cfg Entry, getenv func(string) string) (Client, error) {
	return newClient(name, cfg, getenv, 0)
}

// newClient is New with a cap on the delay between retries (0: the
// library's), which keeps retry tests fast.
func newClient(name string, e Entry, getenv func(string) string, maxRetryDelay time.Duration) (*client, error) {
	if msg := checkBaseURL(e.BaseURL); msg != "" {
		return nil, fmt.Errorf("llm %q: %w: %s", name, ErrNotConfigured, msg)
	}
	if e.Model == "" {
		return nil, fmt.Errorf("llm %q: %w: no model: set model in [llm.%s]", name, ErrNotConfigured, name)
	}
	if e.Timeout <= 0 {
		e.Timeout = DefaultTimeout
	}
	e.MaxRetries = min(max(e.MaxRetries, 0), MaxRetriesLimit)

	key := ""
	if e.APIKeyEnv != "" {
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		key = getenv(e.APIKeyEnv)
		if key == "" {
			return nil, fmt.Errorf("llm %q: %w: environment variable %s (api_key_env) is not set: "+
				"export it with the API key, or remove api_key_env from [llm.%s] if the endpoint needs no key",
				name, ErrNotConfigured, e.APIKeyEnv, name)
		}
	}

	// A transport of its own: closing idle connections must not touch other
	// clients, and settings must not leak in from http.DefaultTransport users.
	transport := &http.Transport{Proxy: http.ProxyFromEnvironment}
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		transport = t.Clone()
	}
	opts := []option.RequestOption{
		option.WithHTTPClient(&http.Client{Transport: transport}),
		option.WithBaseURL(e.BaseURL),
		option.WithMaxRetries(e.MaxRetries),
		option.WithRequestTimeout(e.Timeout),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	if maxRetryDelay > 0 {
		opts = append(opts, option.WithMaxRetryDelay(maxRetryDelay))
	}
	return &client{
		name:    name,
		entry:   e,
		baseURL: redactURL(e.BaseURL),
		scrub: func(s string) string {
			if key == "" {
				return s
			}
			return strings.ReplaceAll(s, key, "[redacted]")
		},
		transport: transport,
		// The chat service alone, not openai.NewClient: that reads
		// OPENAI_* variables, and the config file is the only source here.
		chat: openai.NewChatCompletionService(opts...),
	}, nil
}

// Chat sends req and returns the first choice. Each attempt is bounded by
// the entry's timeout; connection failures and HTTP 408, 409, 429 and 5xx
// are retried up to max_retries times with the library's backoff; a timed
// out attempt is not retried. Failures are *Error values wrapping
// ErrUnavailable, ErrTimeout, ErrBadResponse or ErrRejected.
func (c *client) Chat(ctx context.Context, req ChatRequest) (*ChatResponse, error) {
	params, err := c.params(req)
	if err != nil {
		return nil, err
	}
	var attempts atomic.Int32
	var httpRes *http.Response
	res, err := c.chat.New(ctx, params,
		option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
			attempts.Add(1)
			return next(r)
		}),
		option.WithResponseInto(&httpRes),
	)
	status, contentType := 0, ""
	if httpRes != nil {
		status, contentType = httpRes.StatusCode, httpRes.Header.Get("Content-Type")
	}
	if err != nil {
		return nil, c.classify(ctx, err, status, contentType, int(attempts.Load()))
	}
	if len(res.Choices) == 0 {
		return nil, &Error{LLM: c.name, BaseURL: c.baseURL, Kind: ErrBadResponse, StatusCode: status,
			Attempts: int(attempts.Load()),
			Detail: "bad response: the completion has no choices: check that base_url points at an " +
				"OpenAI-compatible chat-completions API"}
	}
	return c.response(res), nil
}

func (c *client) params(req ChatRequest) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{Model: shared.ChatModel(c.entry.Model)}
	if len(req.Messages) == 0 {
		return p, c.invalid("no messages: a chat needs at least one")
	}
	for i, m := range req.Messages {
		msg, err := c.message(i, m)
		if err != nil {
			return p, err
		}
		p.Messages = append(p.Messages, msg)
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return p, c.invalid("tool %d has no name", i)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			var schema map[string]any
			if err := json.Unmarshal(t.Parameters, &schema); err != nil || schema == nil {
				return p, c.invalid("tool %q: parameters must be a JSON Schema object", t.Name)
			}
			fn.Parameters = schema
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	switch {
	case req.Temperature != nil:
		p.Temperature = openai.Float(*req.Temperature)
	case c.entry.Temperature != nil:
		p.Temperature = openai.Float(*c.entry.Temperature)
	}
	switch {
	case req.MaxTokens > 0:
		p.MaxTokens = openai.Int(int64(req.MaxTokens))
	case c.entry.MaxTokens > 0:
		p.MaxTokens = openai.Int(int64(c.entry.MaxTokens))
	}
	return p, nil
}

func (c *client) message(i int, m Message) (openai.ChatCompletionMessageParamUnion, error) {
	var u openai.ChatCompletionMessageParamUnion
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return u, c.invalid("message %d: only assistant messages carry tool calls, not %q", i, m.Role)
	}
	switch m.Role {
	case RoleSystem:
		u = openai.SystemMessage(m.Content)
		if m.Name != "" {
			u.OfSystem.Name = openai.String(m.Name)
		}
	case RoleDeveloper:
		u = openai.DeveloperMessage(m.Content)
		if m.Name != "" {
			u.OfDeveloper.Name = openai.String(m.Name)
		}
	case RoleUser:
		u = openai.UserMessage(m.Content)
		if m.Name != "" {
			u.OfUser.Name = openai.String(m.Name)
		}
	case RoleAssistant:
		a := &openai.ChatCompletionAssistantMessageParam{}
		if m.Content != "" || len(m.ToolCalls) == 0 {
			a.Content.OfString = openai.String(m.Content)
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return u, c.invalid("message %d: tool call %d needs an id and a name", i, j)
			}
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: tc.ID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      tc.Name,
						Arguments: argumentsText(tc.Arguments),
					},
				},
			})
		}
		u.OfAssistant = a
	case RoleTool:
		if m.ToolCallID == "" {
			return u, c.invalid("message %d: a tool message needs tool_call_id, the id of the call it answers", i)
		}
		u = openai.ToolMessage(m.Content, m.ToolCallID)
	default:
		return u, c.invalid("message %d: unknown role %q: use system, developer, user, assistant or tool", i, m.Role)
	}
	return u, nil
}

func (c *client) response(res *openai.ChatCompletion) *ChatResponse {
	ch := res.Choices[0]
	out := &ChatResponse{
		Message:      Message{Role: RoleAssistant, Content: ch.Message.Content},
		FinishReason: ch.FinishReason,
		Usage: Usage{
			PromptTokens:     int(res.Usage.PromptTokens),
			CompletionTokens: int(res.Usage.CompletionTokens),
			TotalTokens:      int(res.Usage.TotalTokens),
		},
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue // custom (free-form) tools are never declared by Chat
		}
		out.Message.ToolCalls = append(out.Message.ToolCalls, ToolCall{
			ID:        tc.ID,
			Name:      tc.Function.Name,
			Arguments: argumentsJSON(tc.Function.Arguments),
		})
	}
	return out
}

// argumentsJSON keeps the model's arguments as JSON: as written when valid,
// {} when empty, else as a JSON string holding the text.
func argumentsJSON(s string) json.RawMessage {
	switch t := strings.TrimSpace(s); {
	case t == "":
		return json.RawMessage("{}")
	case json.Valid([]byte(t)):
		return json.RawMessage(t)
	default:
		b, _ := json.Marshal(s)
		return b
	}
}

// argumentsText is the inverse of argumentsJSON, for sending a tool call
// back in the conversation as the model wrote it.
func argumentsText(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "{}"
	}
	if t[0] == '"' {
		var s string
		if json.Unmarshal(t, &s) == nil {
			return s
		}
	}
	return string(t)
}

// closeIdle drops the client's idle connections.
func (c *client) closeIdle() { c.transport.CloseIdleConnections() }
