package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/nexus-eval/nexus/internal/llmtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// post sends a chat-completions request and returns the status and the
// decoded JSON body (nil when it is not JSON).
func post(t *testing.T, ctx context.Context, url, body string) (int, map[string]any, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer k")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if json.Unmarshal(data, &v) != nil {
		v = map[string]any{"raw": string(data)}
	}
	return res.StatusCode, v, nil
}

const chatBody = `{"model":"m","messages":[{"role":"system","content":"sys"},` +
	`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},` +
	`{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
	`{"role":"tool","content":"r","tool_call_id":"c1"}],` +
	`"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}}}],` +
	`"temperature":0.5,"max_tokens":10}`

func TestScript(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t,
		llmtest.Text("hello"),
		llmtest.Calls(llmtest.Call("f", `{"x":1}`)),
		llmtest.Status(503, "busy"),
		llmtest.Malformed(),
		llmtest.Delay(time.Millisecond, llmtest.Step{Text: "late", FinishReason: "length",
			Usage: &llmtest.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}}),
	)
	type reply struct {
		status int
		body   map[string]any
	}
	var got []reply
	for range 6 {
		status, body, err := post(t, context.Background(), srv.URL, chatBody)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, reply{status, body})
	}
	choice := func(msg map[string]any, finish string) []any {
		return []any{map[string]any{"index": 0.0, "message": msg, "finish_reason": finish}}
	}
	completion := func(i int, msg map[string]any, finish string, p, c float64) map[string]any {
		return map[string]any{"id": fmt.Sprintf("chatcmpl-%d", i), "object": "chat.completion",
			"created": float64(llmtest.Created), "model": "m", "choices": choice(msg, finish),
			"usage": map[string]any{"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}}
	}
	prompt := float64(len("sys") + len("ab") + len("r"))
	want := []reply{
		{200, completion(0, map[string]any{"role": "assistant", "content": "hello"}, "stop", prompt, 5)},
		{200, completion(1, map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
			map[string]any{"id": "call_1_0", "type": "function", "function": map[string]any{"name": "f", "arguments": `{"x":1}`}},
		}}, "tool_calls", prompt, float64(len("f")+len(`{"x":1}`)))},
		{503, map[string]any{"error": map[string]any{"message": "busy", "type": "server_error", "param": nil, "code": nil}}},
		{200, map[string]any{"raw": `{"id":"chatcmpl-broken","object":"chat.completion","choices":[{"index":0,"message":{"role":"assis`}},
		{200, completion(4, map[string]any{"role": "assistant", "content": "late"}, "length", 1, 1)},
		{400, map[string]any{"error": map[string]any{"message": "llmtest: script has no step for request 5 (it has 5 steps)",
			"type": "invalid_request_error", "param": nil, "code": nil}}},
	}
	want[4].body["usage"] = map[string]any{"prompt_tokens": 1.0, "completion_tokens": 2.0, "total_tokens": 3.0}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(reply{})); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	if srv.Remaining() != 0 || srv.Count() != 6 {
		t.Errorf("Remaining = %d, Count = %d; want 0 and 6", srv.Remaining(), srv.Count())
	}

	r := srv.Requests()[0]
	r.Body = nil
	wantReq := llmtest.Request{
		Authorization: "Bearer k",
		Model:         "m",
		Messages: []llmtest.Message{
			{Role: "system", Content: "sys"},
			{Role: "user", Content: "ab"},
			{Role: "assistant", ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "f", Arguments: "{}"}}},
			{Role: "tool", Content: "r", ToolCallID: "c1"},
		},
		Tools:       []llmtest.Tool{{Name: "f", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
		Temperature: new(0.5),
		MaxTokens:   10,
	}
	if diff := cmp.Diff(wantReq, r); diff != "" {
		t.Errorf("recorded request (-want +got):\n%s", diff)
	}
}

func TestDrop(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Drop(), llmtest.Text("after"))
	if _, _, err := post(t, context.Background(), srv.URL, chatBody); err == nil {
		t.Error("a dropped request got a reply")
	}
	if status, _, err := post(t, context.Background(), srv.URL, chatBody); err != nil || status != 200 {
		t.Errorf("the request after a drop: %d %v", status, err)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Text("unused"))
	tests := []struct {
		name, method, path, body string
		want                     int
	}{
		{name: "wrong path", method: http.MethodPost, path: "/v1/completions", body: "{}", want: 404},
		{name: "wrong method", method: http.MethodGet, path: "/v1/chat/completions", want: 404},
		{name: "not JSON", method: http.MethodPost, path: "/v1/chat/completions", body: "{", want: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequest(tt.method, strings.TrimSuffix(srv.URL, "/v1")+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tr := &http.Transport{}
			defer tr.CloseIdleConnections()
			res, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tt.want {
				t.Errorf("status %d, want %d", res.StatusCode, tt.want)
			}
		})
	}
	t.Cleanup(func() {
		if srv.Count() != 0 || srv.Remaining() != 1 {
			t.Errorf("bad requests were recorded (%d) or used a step (%d left)", srv.Count(), srv.Remaining())
		}
	})
}

// TestRuleConcurrent answers many concurrent requests by rule: every
// request is recorded once and gets its own answer.
func TestRuleConcurrent(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewRule(t, func(r llmtest.Request) llmtest.Step {
		last := r.Messages[len(r.Messages)-1]
		if last.Role == "tool" {
			return llmtest.Text("result was " + last.Content)
		}
		return llmtest.Calls(llmtest.Call("echo", fmt.Sprintf(`{"q":%q}`, last.Content)))
	})
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"model":"m","messages":[{"role":"tool","content":"%d","tool_call_id":"x"}]}`, i)
			status, got, err := post(t, context.Background(), srv.URL, body)
			if err != nil || status != 200 {
				t.Errorf("request %d: %d %v", i, status, err)
				return
			}
			content := got["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
			if content != fmt.Sprintf("result was %d", i) {
				t.Errorf("request %d got %v", i, content)
			}
		})
	}
	wg.Wait()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("recorded %d requests, want %d", len(reqs), n)
	}
	for i, r := range reqs {
		if r.Index != i {
			t.Errorf("request %d has Index %d", i, r.Index)
		}
	}
}

// TestCloseEndsHangingRequests checks that Close returns while requests
// hang or wait, and that the clients see the connection end.
func TestCloseEndsHangingRequests(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Hang(), llmtest.Delay(time.Hour, llmtest.Text("late")))
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, _, err := post(t, context.Background(), srv.URL, `{"model":"m","messages":[]}`)
			errs <- err
		}()
	}
	for srv.Count() < 2 {
		time.Sleep(time.Millisecond)
	}
	srv.Close()
	srv.Close() // twice is fine
	for range 2 {
		if err := <-errs; err == nil {
			t.Error("a hanging request got a reply; want the connection closed")
		}
	}
}

// TestHangEndsWhenClientGivesUp checks that a client timeout frees the
// handler (nothing waits for Close).
func TestHangEndsWhenClientGivesUp(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Hang())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err := post(t, ctx, srv.URL, `{"model":"m","messages":[]}`)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error = %v, want a deadline", err)
	}
}
