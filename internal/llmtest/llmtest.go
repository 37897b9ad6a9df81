// Package llmtest is a local HTTP server that speaks the OpenAI
// chat-completions wire format (POST /v1/chat/completions) with scripted
// replies, for tests of LLM clients and of agents that call an LLM. It
// records every request it receives.
//
// A scripted server (New) answers the n-th request with the n-th Step: a
// text reply, a tool-call reply, an HTTP error, a malformed body, after an
// optional delay, or never (Hang). A rule server (NewRule) asks a function
// for the Step of each request, so an agent's tool results can be answered
// as they come.
package llmtest

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Created is the "created" timestamp of every reply, fixed so replies are
// reproducible.
const Created = 1700000000

// Step is the server's answer to one request. The zero Step is an empty
// assistant text reply.
type Step struct {
	// Text is the assistant's content.
	Text string
	// ToolCalls makes the reply a tool-call reply (finish_reason
	// "tool_calls"). Calls without an ID get "call_<request>_<index>".
	ToolCalls []ToolCall
	// FinishReason overrides the default ("stop", or "tool_calls" with
	// ToolCalls).
	FinishReason string
	// Usage overrides the default token counts: prompt_tokens is the byte
	// length of the request's message contents, completion_tokens that of
	// the reply's text and arguments (a deterministic stand-in for tokens).
	Usage *Usage

	// Status, when not zero, makes the reply an HTTP error with an OpenAI
	// error body ({"error":{"message":ErrorMessage,...}}), or with Raw
	// when that is set.
	Status       int
	ErrorMessage string

	// Malformed replies 200 with a truncated JSON body.
	Malformed bool
	// Raw, when not empty, is sent verbatim as the body (with status 200
	// unless Status is set), with ContentType (default "application/json").
	Raw         string
	ContentType string

	// Delay waits before replying. The wait ends early, with no reply,
	// when the client gives up or the server closes.
	Delay time.Duration
	// Hang never replies: the request waits until the client gives up or
	// the server closes.
	Hang bool
	// Drop closes the connection without a reply, like a server that
	// crashed mid-request.
	Drop bool
}

// ToolCall is a function call in a reply. Arguments is the JSON text, as on
// the wire.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Usage is the token count of a reply.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Text is a text reply.
func Text(s string) Step { return Step{Text: s} }

// Calls is a tool-call reply.
func Calls(calls ...ToolCall) Step { return Step{ToolCalls: calls} }

// Call is a tool call with arguments given as JSON text; the server assigns
// the ID.
func Call(name, arguments string) ToolCall { return ToolCall{Name: name, Arguments: arguments} }

// Status is an HTTP error reply.
func Status(code int, message string) Step { return Step{Status: code, ErrorMessage: message} }

// Malformed is a 200 reply whose JSON body is cut short.
func Malformed() Step { return Step{Malformed: true} }

// Hang is a request that is never answered.
func Hang() Step { return Step{Hang: true} }

// Drop is a request whose connection is closed without a reply.
func Drop() Step { return Step{Drop: true} }

// Delay is reply, sent after d.
func Delay(d time.Duration, reply Step) Step {
	reply.Delay = d
	return reply
}

// Request is one request as the server received it.
type Request struct {
	// Index counts requests from 0, in order of arrival.
	Index int
	// Authorization is the Authorization header, e.g. "Bearer sk-…".
	Authorization string
	Model         string
	Messages      []Message
	Tools         []Tool
	Temperature   *float64
	MaxTokens     int
	// Body is the raw request body.
	Body json.RawMessage
}

// Message is a chat message as sent by the client.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Name       string     `json:"name,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
}

// Tool is a function tool declared by the client.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// Rule decides the reply to a request.
type Rule func(Request) Step

// Server is a running fake endpoint. Its methods are safe for concurrent
// use.
type Server struct {
	// URL is the base URL to configure a client with; it ends in /v1.
	URL string

	srv     *httptest.Server
	rule    Rule
	closing chan struct{}
	once    sync.Once

	mu       sync.Mutex
	script   []Step
	next     int
	requests []Request
}

// New starts a scripted server that answers the n-th request with
// steps[n], and a 400 error saying so once the script is used up. It closes
// when the test ends.
func New(tb testing.TB, steps ...Step) *Server {
	return start(tb, append([]Step(nil), steps...), nil)
}

// NewRule starts a server that answers each request with rule's Step. It
// closes when the test ends.
func NewRule(tb testing.TB, rule Rule) *Server {
	return start(tb, nil, rule)
}

func start(tb testing.TB, script []Step, rule Rule) *Server {
	tb.Helper()
	s := &Server{script: script, rule: rule, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL + "/v1"
	tb.Cleanup(s.Close)
	return s
}

// Close stops the server: hanging and delayed requests end without a
// reply, and Close returns once every handler has. Safe to call twice.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.closing)
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Requests returns a copy of the requests received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Count returns how many requests were received.
func (s *Server) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

// Remaining returns how many scripted steps are still unused.
func (s *Server) Remaining() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.script) - s.next
}

// wireRequest is the subset of the request body the server reads.
type wireRequest struct {
	Model       string        `json:"model"`
	Messages    []wireMessage `json:"messages"`
	Tools       []wireTool    `json:"tools"`
	Temperature *float64      `json:"temperature"`
	MaxTokens   int           `json:"max_tokens"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCallID string          `json:"tool_call_id"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
}

type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function Tool   `json:"function"`
}

const path = "/v1/chat/completions"

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != path {
		writeError(w, http.StatusNotFound, fmt.Sprintf("llmtest serves POST %s, not %s %s", path, r.Method, r.URL.Path))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	var wr wireRequest
	if err := json.Unmarshal(body, &wr); err != nil {
		writeError(w, http.StatusBadRequest, "llmtest: request body is not JSON: "+err.Error())
		return
	}
	req := Request{
		Authorization: r.Header.Get("Authorization"),
		Model:         wr.Model,
		Temperature:   wr.Temperature,
		MaxTokens:     wr.MaxTokens,
		Body:          body,
	}
	for _, m := range wr.Messages {
		msg := Message{Role: m.Role, Content: contentText(m.Content), Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, t.Function)
	}

	s.mu.Lock()
	req.Index = len(s.requests)
	s.requests = append(s.requests, req)
	var step Step
	ok := true
	if s.rule == nil {
		if s.next < len(s.script) {
			step = s.script[s.next]
			s.next++
		} else {
			ok = false
		}
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("llmtest: script has no step for request %d (it has %d steps)",
			req.Index, len(s.script)))
		return
	}
	if s.rule != nil {
		step = s.rule(req)
	}
	s.reply(w, r, req, step)
}

// contentText flattens a content field: a string, or an array of text
// parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

func (s *Server) reply(w http.ResponseWriter, r *http.Request, req Request, step Step) {
	if step.Hang {
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			// Drop the connection rather than answer an empty 200.
			panic(http.ErrAbortHandler)
		}
	}
	if step.Delay > 0 {
		t := time.NewTimer(step.Delay)
		defer t.Stop()
		select {
		case <-r.Context().Done():
			return
		case <-s.closing:
			panic(http.ErrAbortHandler)
		case <-t.C:
		}
	}
	switch {
	case step.Drop:
		panic(http.ErrAbortHandler)
	case step.Status != 0 && step.Raw != "":
		w.Header().Set("Content-Type", cmp.Or(step.ContentType, "application/json"))
		w.WriteHeader(step.Status)
		_, _ = io.WriteString(w, step.Raw)
	case step.Status != 0:
		msg := step.ErrorMessage
		if msg == "" {
			msg = http.StatusText(step.Status)
		}
		writeError(w, step.Status, msg)
	case step.Malformed:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`)
	case step.Raw != "":
		w.Header().Set("Content-Type", cmp.Or(step.ContentType, "application/json"))
		_, _ = io.WriteString(w, step.Raw)
	default:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(completion(req, step))
	}
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	typ := "invalid_request_error"
	if status >= 500 {
		typ = "server_error"
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil},
	})
}

type wireCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   Usage        `json:"usage"`
}

type wireChoice struct {
	Index        int              `json:"index"`
	Message      wireReplyMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

type wireReplyMessage struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

func completion(req Request, step Step) wireCompletion {
	msg := wireReplyMessage{Role: "assistant"}
	if step.Text != "" || len(step.ToolCalls) == 0 {
		text := step.Text
		msg.Content = &text
	}
	completionLen := len(step.Text)
	for i, tc := range step.ToolCalls {
		w := wireToolCall{ID: tc.ID, Type: "function"}
		if w.ID == "" {
			w.ID = fmt.Sprintf("call_%d_%d", req.Index, i)
		}
		w.Function.Name = tc.Name
		w.Function.Arguments = tc.Arguments
		msg.ToolCalls = append(msg.ToolCalls, w)
		completionLen += len(tc.Name) + len(tc.Arguments)
	}
	finish := step.FinishReason
	if finish == "" {
		finish = "stop"
		if len(step.ToolCalls) > 0 {
			finish = "tool_calls"
		}
	}
	usage := Usage{CompletionTokens: completionLen}
	for _, m := range req.Messages {
		usage.PromptTokens += len(m.Content)
	}
	usage.TotalTokens = usage.PromptTokens + usage.CompletionTokens
	if step.Usage != nil {
		usage = *step.Usage
	}
	return wireCompletion{
		ID:      fmt.Sprintf("chatcmpl-%d", req.Index),
		Object:  "chat.completion",
		Created: Created,
		Model:   req.Model,
		Choices: []wireChoice{{Index: 0, Message: msg, FinishReason: finish}},
		Usage:   usage,
	}
}
