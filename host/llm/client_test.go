package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nexus-eval/nexus/internal/llmtest"
)

const (
	testKey    = "sk-test-DO-NOT-LEAK-1234"
	testKeyEnv = "NEXUS_TEST_LLM_KEY"
)

func getenv(k string) string {
	if k == testKeyEnv {
		return testKey
	}
	return ""
}

// testEntry is an entry for a local server: a key, and retries.
func testEntry(url string) Entry {
	return Entry{BaseURL: url, Model: "test-model", APIKeyEnv: testKeyEnv, Timeout: 10 * time.Second, MaxRetries: 2}
}

// testClient is a client whose retries wait at most a millisecond.
func testClient(t *testing.T, e Entry) *client {
	t.Helper()
	c, err := newClient("local", e, getenv, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.closeIdle)
	return c
}

var hello = ChatRequest{Messages: []Message{
	{Role: RoleSystem, Content: "be brief"},
	{Role: RoleUser, Content: "hi", Name: "ann"},
}}

func TestChatText(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Text("hello"))
	c := testClient(t, testEntry(srv.URL))
	got, err := c.Chat(context.Background(), hello)
	if err != nil {
		t.Fatal(err)
	}
	want := &ChatResponse{
		Message:      Message{Role: RoleAssistant, Content: "hello"},
		FinishReason: "stop",
		Usage:        Usage{PromptTokens: len("be brief") + len("hi"), CompletionTokens: len("hello"), TotalTokens: 15},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server got %d requests, want 1", len(reqs))
	}
	wantMsgs := []llmtest.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi", Name: "ann"}}
	if diff := cmp.Diff(wantMsgs, reqs[0].Messages); diff != "" {
		t.Errorf("messages sent (-want +got):\n%s", diff)
	}
	if reqs[0].Model != "test-model" || reqs[0].Authorization != "Bearer "+testKey {
		t.Errorf("model %q, authorization %q: want test-model and the key from $%s", reqs[0].Model, reqs[0].Authorization, testKeyEnv)
	}
	if reqs[0].Temperature != nil || reqs[0].MaxTokens != 0 || len(reqs[0].Tools) != 0 {
		t.Errorf("unset options were sent: %s", reqs[0].Body)
	}
}

func TestChatTools(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t,
		llmtest.Calls(llmtest.Call("calculator", `{"expr":"2+2"}`), llmtest.ToolCall{ID: "c2", Name: "noargs"}),
		llmtest.Step{Text: "4", Usage: &llmtest.Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}},
	)
	c := testClient(t, testEntry(srv.URL))
	schema := json.RawMessage(`{"type":"object","properties":{"expr":{"type":"string"}},"required":["expr"]}`)
	req := ChatRequest{
		Messages: []Message{{Role: RoleUser, Content: "2+2?"}},
		Tools: []ToolDef{
			{Name: "calculator", Description: "evaluates arithmetic", Parameters: schema},
			{Name: "noargs"},
		},
	}
	got, err := c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &ChatResponse{
		Message: Message{Role: RoleAssistant, ToolCalls: []ToolCall{
			{ID: "call_0_0", Name: "calculator", Arguments: json.RawMessage(`{"expr":"2+2"}`)},
			{ID: "c2", Name: "noargs", Arguments: json.RawMessage(`{}`)},
		}},
		FinishReason: "tool_calls",
		Usage:        Usage{PromptTokens: 4, CompletionTokens: len("calculator") + len(`{"expr":"2+2"}`) + len("noargs"), TotalTokens: 34},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tool-call response (-want +got):\n%s", diff)
	}

	// Answer the calls: the assistant turn and the tool results go back.
	req.Messages = append(req.Messages, got.Message,
		Message{Role: RoleTool, Content: "4", ToolCallID: "call_0_0"},
		Message{Role: RoleTool, Content: "done", ToolCallID: "c2"})
	got, err = c.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&ChatResponse{Message: Message{Role: RoleAssistant, Content: "4"}, FinishReason: "stop",
		Usage: Usage{PromptTokens: 7, CompletionTokens: 1, TotalTokens: 8}}, got); diff != "" {
		t.Errorf("final response (-want +got):\n%s", diff)
	}

	reqs := srv.Requests()
	wantTools := []llmtest.Tool{
		{Name: "calculator", Description: "evaluates arithmetic", Parameters: schema},
		{Name: "noargs"},
	}
	if diff := cmp.Diff(wantTools, reqs[0].Tools, cmp.Transformer("json", canonicalJSON)); diff != "" {
		t.Errorf("tools sent (-want +got):\n%s", diff)
	}
	wantMsgs := []llmtest.Message{
		{Role: "user", Content: "2+2?"},
		{Role: "assistant", ToolCalls: []llmtest.ToolCall{
			{ID: "call_0_0", Name: "calculator", Arguments: `{"expr":"2+2"}`},
			{ID: "c2", Name: "noargs", Arguments: `{}`},
		}},
		{Role: "tool", Content: "4", ToolCallID: "call_0_0"},
		{Role: "tool", Content: "done", ToolCallID: "c2"},
	}
	if diff := cmp.Diff(wantMsgs, reqs[1].Messages); diff != "" {
		t.Errorf("second request messages (-want +got):\n%s", diff)
	}
}

// canonicalJSON compares JSON by value, not by spelling.
func canonicalJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	return v
}

func TestChatToolArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, wire string
		want       json.RawMessage
	}{
		{name: "object", wire: `{"a":1}`, want: json.RawMessage(`{"a":1}`)},
		{name: "empty is {}", wire: ``, want: json.RawMessage(`{}`)},
		{name: "invalid JSON becomes a JSON string", wire: `{"a":`, want: json.RawMessage(`"{\"a\":"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Calls(llmtest.ToolCall{ID: "x", Name: "f", Arguments: tt.wire}), llmtest.Text("ok"))
			c := testClient(t, testEntry(srv.URL))
			got, err := c.Chat(context.Background(), hello)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Message.ToolCalls[0].Arguments); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
			// Sent back, the call reads as the model wrote it.
			req := ChatRequest{Messages: append(append([]Message(nil), hello.Messages...), got.Message,
				Message{Role: RoleTool, Content: "r", ToolCallID: "x"})}
			if _, err := c.Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			wantWire := tt.wire
			if wantWire == "" {
				wantWire = "{}"
			}
			if got := srv.Requests()[1].Messages[2].ToolCalls[0].Arguments; got != wantWire {
				t.Errorf("arguments sent back = %q, want %q", got, wantWire)
			}
		})
	}
}

func TestChatOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		entryTemp *float64
		entryMax  int
		req       ChatRequest
		wantTemp  *float64
		wantMax   int
	}{
		{name: "none"},
		{name: "entry defaults", entryTemp: ptr(0.3), entryMax: 100, wantTemp: ptr(0.3), wantMax: 100},
		{name: "request wins", entryTemp: ptr(0.3), entryMax: 100,
			req: ChatRequest{Temperature: ptr(0.0), MaxTokens: 7}, wantTemp: ptr(0.0), wantMax: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Text("ok"))
			e := testEntry(srv.URL)
			e.Temperature, e.MaxTokens = tt.entryTemp, tt.entryMax
			req := tt.req
			req.Messages = hello.Messages
			if _, err := testClient(t, e).Chat(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := srv.Requests()[0]
			if diff := cmp.Diff(tt.wantTemp, got.Temperature); diff != "" || got.MaxTokens != tt.wantMax {
				t.Errorf("temperature (-want +got): %s; max_tokens = %d, want %d", diff, got.MaxTokens, tt.wantMax)
			}
		})
	}
}

func TestChatRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRetries int
		script     []llmtest.Step
		wantErr    error // nil: success
		wantCount  int
		wantText   string // error text with $URL for the base URL
	}{{
		name:       "5xx retried then succeeding",
		maxRetries: 2,
		script:     []llmtest.Step{llmtest.Status(503, "busy"), llmtest.Status(502, ""), llmtest.Text("ok")},
		wantCount:  3,
	}, {
		name:       "429 retried",
		maxRetries: 1,
		script:     []llmtest.Step{llmtest.Status(429, "slow down"), llmtest.Text("ok")},
		wantCount:  2,
	}, {
		name:       "no retries: one request",
		maxRetries: 0,
		script:     []llmtest.Step{llmtest.Status(500, "boom"), llmtest.Text("never")},
		wantErr:    ErrUnavailable,
		wantCount:  1,
		wantText: `llm "local" at $URL: endpoint unavailable: HTTP 500 Internal Server Error ("boom") after 1 attempt: ` +
			`try again later, or raise max_retries in [llm.local]`,
	}, {
		name:       "retries bounded: 1 + max_retries requests",
		maxRetries: 3,
		script: []llmtest.Step{llmtest.Status(503, "busy"), llmtest.Status(503, "busy"), llmtest.Status(503, "busy"),
			llmtest.Status(503, "still busy"), llmtest.Text("never")},
		wantErr:   ErrUnavailable,
		wantCount: 4,
		wantText: `llm "local" at $URL: endpoint unavailable: HTTP 503 Service Unavailable ("still busy") after 4 attempts: ` +
			`try again later, or raise max_retries in [llm.local]`,
	}, {
		name:       "4xx not retried",
		maxRetries: 2,
		script:     []llmtest.Step{llmtest.Status(400, "bad temperature"), llmtest.Text("never")},
		wantErr:    ErrRejected,
		wantCount:  1,
		wantText:   `llm "local" at $URL: request rejected: HTTP 400 Bad Request ("bad temperature")`,
	}, {
		name:       "401 names the key variable and masks an echoed key",
		maxRetries: 2,
		script:     []llmtest.Step{llmtest.Status(401, "Incorrect API key provided: "+testKey)},
		wantErr:    ErrRejected,
		wantCount:  1,
		wantText: `llm "local" at $URL: request rejected: HTTP 401 Unauthorized ("Incorrect API key provided: [redacted]"): ` +
			`check the API key in $` + testKeyEnv,
	}, {
		name:       "404 points at base_url and model",
		maxRetries: 2,
		script:     []llmtest.Step{llmtest.Status(404, "The model `test-model` does not exist")},
		wantErr:    ErrRejected,
		wantCount:  1,
		wantText: "llm \"local\" at $URL: request rejected: HTTP 404 Not Found (\"The model `test-model` does not exist\"): " +
			`check that base_url ends where the API starts (often /v1) and that model "test-model" exists there`,
	}, {
		name:       "dropped connections retried then succeeding",
		maxRetries: 1,
		script:     []llmtest.Step{llmtest.Drop(), llmtest.Text("ok")},
		wantCount:  2,
	}, {
		name:       "dropped connections, retries bounded",
		maxRetries: 2,
		script:     []llmtest.Step{llmtest.Drop(), llmtest.Drop(), llmtest.Drop(), llmtest.Text("never")},
		wantErr:    ErrUnavailable,
		wantCount:  3,
		wantText: `llm "local" at $URL: endpoint unavailable: the server closed the connection without answering after 3 attempts: ` +
			`check that the server is running and base_url is right`,
	}, {
		name:       "5xx with a body that is not JSON",
		maxRetries: 0,
		script:     []llmtest.Step{{Status: 502, Raw: "<html>bad gateway</html>", ContentType: "text/html"}},
		wantErr:    ErrUnavailable,
		wantCount:  1,
		wantText: `llm "local" at $URL: endpoint unavailable: HTTP 502 Bad Gateway after 1 attempt: ` +
			`try again later, or raise max_retries in [llm.local]`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tt.script...)
			e := testEntry(srv.URL)
			e.MaxRetries = tt.maxRetries
			got, err := testClient(t, e).Chat(context.Background(), hello)
			if n := srv.Count(); n != tt.wantCount {
				t.Errorf("server got %d requests, want %d", n, tt.wantCount)
			}
			if tt.wantErr == nil {
				if err != nil || got.Message.Content != "ok" {
					t.Fatalf("Chat = %+v, %v; want ok", got, err)
				}
				return
			}
			checkError(t, err, tt.wantErr, strings.ReplaceAll(tt.wantText, "$URL", srv.URL))
		})
	}
}

// checkError checks the sentinel, the text, and that the key is not in it.
func checkError(t *testing.T, err, sentinel error, text string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error = %v, want %v", err, sentinel)
	}
	if text != "" {
		if diff := cmp.Diff(text, err.Error()); diff != "" {
			t.Errorf("error text (-want +got):\n%s", diff)
		}
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(fmt.Sprintf("%+v %#v", err, err), testKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

func TestChatFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		script    []llmtest.Step
		timeout   time.Duration
		wantErr   error
		also      error // a second error the result must wrap
		wantCount int
		wantText  string
	}{{
		name:      "slow server times out, not retried",
		script:    []llmtest.Step{llmtest.Hang(), llmtest.Text("never")},
		timeout:   50 * time.Millisecond,
		wantErr:   ErrTimeout,
		also:      context.DeadlineExceeded,
		wantCount: 1,
		wantText: `llm "local" at $URL: timed out: no answer within timeout 50ms: ` +
			`raise timeout in [llm.local] or check the server's load`,
	}, {
		name:      "malformed JSON",
		script:    []llmtest.Step{llmtest.Malformed()},
		wantErr:   ErrBadResponse,
		wantCount: 1,
	}, {
		name:      "not JSON",
		script:    []llmtest.Step{{Raw: "<html>hello</html>", ContentType: "text/html"}},
		wantErr:   ErrBadResponse,
		wantCount: 1,
	}, {
		name:      "no choices",
		script:    []llmtest.Step{{Raw: `{"id":"x","object":"chat.completion","choices":[]}`}},
		wantErr:   ErrBadResponse,
		wantCount: 1,
		wantText: `llm "local" at $URL: bad response: the completion has no choices: ` +
			`check that base_url points at an OpenAI-compatible chat-completions API`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, tt.script...)
			e := testEntry(srv.URL)
			if tt.timeout > 0 {
				e.Timeout = tt.timeout
			}
			_, err := testClient(t, e).Chat(context.Background(), hello)
			checkError(t, err, tt.wantErr, strings.ReplaceAll(tt.wantText, "$URL", srv.URL))
			if tt.also != nil && !errors.Is(err, tt.also) {
				t.Errorf("error %v does not wrap %v", err, tt.also)
			}
			if tt.wantErr == ErrBadResponse && !strings.Contains(err.Error(), "bad response: ") {
				t.Errorf("error %q does not say it is a bad response", err)
			}
			var e2 *Error
			if !errors.As(err, &e2) || e2.LLM != "local" || e2.Attempts != tt.wantCount {
				t.Errorf("error %#v: want an *Error for \"local\" with %d attempts", e2, tt.wantCount)
			}
			if n := srv.Count(); n != tt.wantCount {
				t.Errorf("server got %d requests, want %d", n, tt.wantCount)
			}
		})
	}
}

func TestChatBadResponseText(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Step{Raw: "<html>hello</html>", ContentType: "text/html; charset=utf-8"})
	_, err := testClient(t, testEntry(srv.URL)).Chat(context.Background(), hello)
	want := fmt.Sprintf(`llm "local" at %s: bad response: content-type "text/html; charset=utf-8", not JSON: `, srv.URL)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error = %v, want it to start with %q", err, want)
	}
}

func TestChatConnectionRefused(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	tests := []struct {
		maxRetries int
	}{{0}, {2}}
	for _, tt := range tests {
		t.Run(fmt.Sprint("max_retries=", tt.maxRetries), func(t *testing.T) {
			t.Parallel()
			e := testEntry(url)
			e.MaxRetries = tt.maxRetries
			_, err := testClient(t, e).Chat(context.Background(), hello)
			n := tt.maxRetries + 1
			want := fmt.Sprintf(`llm "local" at %s: endpoint unavailable: connection refused after %d attempt%s: `+
				`check that the server is running and base_url is right`, url, n, plural(n))
			checkError(t, err, ErrUnavailable, want)
		})
	}
}

func TestChatCallerContext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		ctx     func() (context.Context, context.CancelFunc)
		wantErr error
	}{
		{name: "cancelled", wantErr: context.Canceled, ctx: func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(20*time.Millisecond, cancel)
			return ctx, cancel
		}},
		{name: "caller deadline", wantErr: ErrTimeout, ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 20*time.Millisecond)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.New(t, llmtest.Hang())
			ctx, cancel := tt.ctx()
			defer cancel()
			_, err := testClient(t, testEntry(srv.URL)).Chat(ctx, hello)
			checkError(t, err, tt.wantErr, "")
		})
	}
}

func TestChatInvalidRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  ChatRequest
		want string
	}{
		{name: "no messages", req: ChatRequest{},
			want: `llm "local": invalid llm request: no messages: a chat needs at least one`},
		{name: "unknown role", req: ChatRequest{Messages: []Message{{Role: "robot", Content: "x"}}},
			want: `llm "local": invalid llm request: message 0: unknown role "robot": use system, developer, user, assistant or tool`},
		{name: "tool message without id", req: ChatRequest{Messages: []Message{{Role: RoleTool, Content: "x"}}},
			want: `llm "local": invalid llm request: message 0: a tool message needs tool_call_id, the id of the call it answers`},
		{name: "tool calls on a user message", req: ChatRequest{Messages: []Message{{Role: RoleUser, ToolCalls: []ToolCall{{ID: "a", Name: "f"}}}}},
			want: `llm "local": invalid llm request: message 0: only assistant messages carry tool calls, not "user"`},
		{name: "schema not an object", req: ChatRequest{Messages: hello.Messages,
			Tools: []ToolDef{{Name: "f", Parameters: json.RawMessage(`[1]`)}}},
			want: `llm "local": invalid llm request: tool "f": parameters must be a JSON Schema object`},
	}
	srv := llmtest.New(t)
	c := testClient(t, testEntry(srv.URL))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := c.Chat(context.Background(), tt.req)
			if !errors.Is(err, ErrInvalidRequest) || err.Error() != tt.want {
				t.Errorf("error = %v, want %q", err, tt.want)
			}
		})
	}
	t.Cleanup(func() {
		if n := srv.Count(); n != 0 {
			t.Errorf("invalid requests reached the server %d times", n)
		}
	})
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		entry   Entry
		env     map[string]string
		wantErr string
	}{
		{name: "key from env", entry: Entry{BaseURL: "http://x/v1", Model: "m", APIKeyEnv: "K"},
			env: map[string]string{"K": testKey}},
		{name: "no key for a local endpoint", entry: Entry{BaseURL: "http://x/v1", Model: "m"}},
		{name: "missing key variable", entry: Entry{BaseURL: "http://x/v1", Model: "m", APIKeyEnv: "MY_LLM_KEY"},
			wantErr: `llm "gpt": llm not configured: environment variable MY_LLM_KEY (api_key_env) is not set: ` +
				`export it with the API key, or remove api_key_env from [llm.gpt] if the endpoint needs no key`},
		{name: "no model", entry: Entry{BaseURL: "http://x/v1"},
			wantErr: `llm "gpt": llm not configured: no model: set model in [llm.gpt]`},
		{name: "bad base URL", entry: Entry{BaseURL: "x", Model: "m"},
			wantErr: `llm "gpt": llm not configured: base_url "x" is not an http(s) URL: write it like "https://api.openai.com/v1"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New("gpt", tt.entry, func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if !errors.Is(err, ErrNotConfigured) || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := fmt.Sprintf("%v %+v %#v", c, c, c); strings.Contains(s, testKey) {
				t.Errorf("printing the client shows the key: %s", s)
			}
		})
	}
}

func TestClients(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewRule(t, func(r llmtest.Request) llmtest.Step { return llmtest.Text(r.Model) })
	cfg := &Config{Path: "/etc/nexus.toml", Found: true, LLM: map[string]Entry{
		"a":      {BaseURL: srv.URL, Model: "model-a", Timeout: time.Second},
		"b":      {BaseURL: srv.URL, Model: "model-b", Timeout: time.Second},
		"keyed":  {BaseURL: srv.URL, Model: "k", APIKeyEnv: "UNSET_VAR", Timeout: time.Second},
		"broken": {BaseURL: "nope", Model: "x"},
	}}
	cs := NewClients(cfg, getenv)
	t.Cleanup(cs.Close)

	if diff := cmp.Diff([]string{"a", "b", "broken", "keyed"}, cs.Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
	// Concurrent first Gets share one client.
	var wg sync.WaitGroup
	got := make([]Client, 8)
	for i := range got {
		wg.Go(func() {
			c, err := cs.Get("a")
			if err != nil {
				t.Error(err)
			}
			got[i] = c
		})
	}
	wg.Wait()
	for _, c := range got[1:] {
		if c != got[0] {
			t.Fatal("Get returned different clients for the same name")
		}
	}
	for _, name := range []string{"a", "b"} {
		c, err := cs.Get(name)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Chat(context.Background(), hello)
		if err != nil || res.Message.Content != "model-"+name {
			t.Errorf("Chat via %q = %+v, %v; want the reply of model-%s", name, res, err, name)
		}
	}

	tests := []struct {
		name string
		cfg  *Config
		get  string
		want string
	}{
		{name: "unknown name lists the configured ones", cfg: cfg, get: "gpt",
			want: `llm "gpt": llm not configured: no such LLM (configured: a, b, broken, keyed): ` +
				`add an [llm.gpt] table with base_url and model to /etc/nexus.toml`},
		{name: "no config file yet", cfg: &Config{Path: "/home/u/.config/nexus/config.toml"}, get: "gpt",
			want: `llm "gpt": llm not configured: no such LLM (none are configured): ` +
				`add an [llm.gpt] table with base_url and model to /home/u/.config/nexus/config.toml (it does not exist yet)`},
		{name: "no config at all", cfg: nil, get: "gpt",
			want: `llm "gpt": llm not configured: no such LLM (none are configured): ` +
				`add an [llm.gpt] table with base_url and model to the host config file (--config)`},
		{name: "unset key fails on use only", cfg: cfg, get: "keyed",
			want: `llm "keyed": llm not configured: environment variable UNSET_VAR (api_key_env) is not set: ` +
				`export it with the API key, or remove api_key_env from [llm.keyed] if the endpoint needs no key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewClients(tt.cfg, getenv).Get(tt.get)
			if !errors.Is(err, ErrNotConfigured) || err.Error() != tt.want {
				t.Errorf("error = %v\nwant    %s", err, tt.want)
			}
		})
	}
}

// TestJSONWire pins the JSON form of the types that cross the plugin
// boundary.
func TestJSONWire(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		v    any
		want string
	}{
		{name: "request", v: ChatRequest{
			Messages:    []Message{{Role: "user", Content: "hi"}, {Role: "tool", Content: "4", ToolCallID: "c1"}},
			Tools:       []ToolDef{{Name: "calc", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
			Temperature: ptr(0.0), MaxTokens: 9},
			want: `{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"4","tool_call_id":"c1"}],` +
				`"tools":[{"name":"calc","description":"d","parameters":{"type":"object"}}],"temperature":0,"max_tokens":9}`},
		{name: "response", v: ChatResponse{
			Message:      Message{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "calc", Arguments: json.RawMessage(`{"x":1}`)}}},
			FinishReason: "tool_calls", Usage: Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}},
			want: `{"message":{"role":"assistant","content":"","tool_calls":[{"id":"c1","name":"calc","arguments":{"x":1}}]},` +
				`"finish_reason":"tool_calls","usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("JSON (-want +got):\n%s", diff)
			}
		})
	}
}
