package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nexus-eval/nexus/host"
	"github.com/nexus-eval/nexus/host/component"
	"github.com/nexus-eval/nexus/host/execution"
	"github.com/nexus-eval/nexus/host/llm"
	"github.com/nexus-eval/nexus/internal/llmtest"
)

// llmHost is a host whose "default" LLM is srv.
func llmHost(t *testing.T, srv *llmtest.Server, root string) *host.Host {
	t.Helper()
	cfg := &llm.Config{LLM: map[string]llm.Entry{"default": {BaseURL: srv.URL, Model: "scripted", MaxRetries: 1}}}
	clients := llm.NewClients(cfg, os.Getenv)
	t.Cleanup(clients.Close)
	return newHost(t, root, func(o *host.Options) { o.LLMs = clients })
}

func TestHostServicesWithinGrants(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Text("forty-two"))
	h := llmHost(t, srv, pluginRoot(t, "test/testplugins/hostuser", "plugins/tools/math", "test/testplugins/echo"))

	if _, err := call(t, h, "calc", `{"expression":"1+1"}`); err == nil || !strings.Contains(err.Error(), "host services need a call made within an execution") {
		t.Fatalf("host services outside an execution: err = %v", err)
	}

	e, ctx := newExec(t, h)
	out, err := callIn(t, ctx, h, "calc", `{"expression":"6*7"}`)
	if err != nil || string(out) != `{"value":42}` {
		t.Fatalf("calc through the host = %s, %v", out, err)
	}
	out, err = callIn(t, ctx, h, "remember", `{"key":"k","value":"v1"}`)
	if err != nil || !strings.Contains(string(out), `"value":"v1"`) {
		t.Fatalf("state round trip = %s, %v", out, err)
	}
	if v, ok := e.State().Get("k"); !ok || string(v) != `"v1"` {
		t.Errorf("execution state k = %s, %v", v, ok)
	}
	out, err = callIn(t, ctx, h, "ask", `{"text":"what is six times seven?"}`)
	if err != nil || !strings.Contains(string(out), "forty-two") {
		t.Fatalf("ask = %s, %v", out, err)
	}
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Messages[0].Content != "what is six times seven?" {
		t.Errorf("LLM saw %+v", reqs)
	}

	_, err = callIn(t, ctx, h, "forbidden", `{"text":"x"}`)
	var ce *component.Error
	if !errors.As(err, &ce) || ce.Code != "permission_denied" || !strings.Contains(err.Error(), `plugin "hostuser" may not call tool "echo/echo"`) || !strings.Contains(err.Error(), `tools = ["echo/echo"]`) {
		t.Fatalf("ungranted tool: err = %v, want permission denied naming the plugin and the grant", err)
	}

	var kinds []string
	var tokens int
	for _, s := range e.Trajectory() {
		kinds = append(kinds, s.Kind+":"+s.Name)
		tokens += s.Usage.TotalTokens
	}
	if got, want := strings.Join(kinds, ","), "tool:math/calculator,llm:default"; got != want {
		t.Errorf("trajectory = %s, want %s (denied calls are not run)", got, want)
	}
	if tokens == 0 || e.Usage().TotalTokens != tokens {
		t.Errorf("token usage: steps %d, execution %+v", tokens, e.Usage())
	}
}

func TestUngrantedPluginIsDenied(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t)
	root := pluginRoot(t, "test/testplugins/hostuser", "plugins/tools/math")
	writeManifest(t, filepath.Join(root, "hostuser"), func(s string) string {
		return regexp.MustCompile(`(?s)\[plugin\.grants\].*?\n\n`).ReplaceAllString(s, "")
	})
	h := llmHost(t, srv, root)
	_, ctx := newExec(t, h)
	for _, tc := range []struct{ tool, input, grant string }{
		{"calc", `{"expression":"1"}`, `tools = ["math/calculator"]`},
		{"remember", `{"key":"k","value":"v"}`, "state = true"},
		{"ask", `{"text":"hi"}`, `llm = ["default"]`},
	} {
		_, err := callIn(t, ctx, h, tc.tool, tc.input)
		if err == nil || !strings.Contains(err.Error(), "permission denied") || !strings.Contains(err.Error(), tc.grant) {
			t.Errorf("%s without grants: err = %v, want permission denied suggesting %s", tc.tool, err, tc.grant)
		}
	}
	if n := srv.Count(); n != 0 {
		t.Errorf("the LLM was called %d times by a plugin without the grant", n)
	}
}

func TestPluginSeesOnlyGrantedEnvironment(t *testing.T) {
	t.Setenv("NEXUS_TEST_GRANTED", "visible")
	t.Setenv("NEXUS_TEST_SECRET", "hunter2")
	h := newHost(t, pluginRoot(t, "test/testplugins/hostuser", "plugins/tools/math"))
	for name, want := range map[string]string{"NEXUS_TEST_GRANTED": "visible", "NEXUS_TEST_SECRET": "", "PATH": os.Getenv("PATH")} {
		out, err := call(t, h, "env", fmt.Sprintf(`{"name":%q}`, name))
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Text string }
		json.Unmarshal(out, &got)
		if got.Text != want {
			t.Errorf("plugin sees %s=%q, want %q", name, got.Text, want)
		}
	}
}

// arithRule answers like a model using the calculator: the question
// becomes a tool call, the tool's result becomes the answer.
func arithRule(r llmtest.Request) llmtest.Step {
	last := r.Messages[len(r.Messages)-1]
	if last.Role == "tool" {
		var v struct{ Value float64 }
		json.Unmarshal([]byte(last.Content), &v)
		return llmtest.Text(fmt.Sprintf(`{"answer": %v}`, v.Value))
	}
	expr := strings.TrimSuffix(strings.TrimPrefix(last.Content, "What is "), "?")
	args, _ := json.Marshal(map[string]string{"expression": expr})
	return llmtest.Calls(llmtest.Call("math__calculator", string(args)))
}

func TestReactAgentSolvesArithWithTheCalculator(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewRule(t, arithRule)
	h := llmHost(t, srv, pluginRoot(t, "plugins/agents/react", "plugins/tasks/arith", "plugins/tools/math"))
	ctx := context.Background()
	task, err := h.Tasks.Get(ctx, "arith")
	if err != nil {
		t.Fatal(err)
	}
	agent, err := h.Agents.Get(ctx, "react")
	if err != nil {
		t.Fatal(err)
	}
	args := json.RawMessage(`{"n": 4, "seed": 3}`)
	solved := 0
	for inst, err := range task.Instances(ctx, args) {
		if err != nil {
			t.Fatal(err)
		}
		e, err := h.NewExecution(host.ExecutionOptions{RunID: "react", InstanceID: inst.ID, LLM: "default"})
		if err != nil {
			t.Fatal(err)
		}
		ictx := execution.With(ctx, e)
		out, err := agent.Run(ictx, inst.Data)
		if err != nil {
			t.Fatalf("%s: react: %v", inst.ID, err)
		}
		res, err := task.Evaluate(ictx, args, inst, out)
		if err != nil {
			t.Fatal(err)
		}
		if res.Passed {
			solved++
		}
		steps := e.Trajectory()
		if len(steps) != 3 || steps[0].Kind != "llm" || steps[1].Name != "math/calculator" || steps[2].Kind != "llm" {
			t.Errorf("%s: trajectory %+v, want llm, tool, llm", inst.ID, steps)
		}
		e.Close()
	}
	if solved != 4 {
		t.Errorf("react solved %d of 4", solved)
	}
}

func TestReactAgentStopsAtItsStepLimit(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewRule(t, func(llmtest.Request) llmtest.Step {
		return llmtest.Calls(llmtest.Call("math__calculator", `{"expression":"1"}`))
	})
	h := llmHost(t, srv, pluginRoot(t, "plugins/agents/react", "plugins/tools/math"))
	agent, err := h.Agents.Get(context.Background(), "react")
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Run(execution.With(context.Background(), mustExec(t, h, "default")), json.RawMessage(`{"question":"loop forever"}`))
	var ce *component.Error
	if !errors.As(err, &ce) || ce.Code != "step_limit" {
		t.Fatalf("looping model: err = %v, want step_limit", err)
	}
	if n := srv.Count(); n != 12 {
		t.Errorf("LLM called %d times, want the step limit 12", n)
	}
}

func TestReactAgentReportsUnavailableLLM(t *testing.T) {
	t.Parallel()
	srv := llmtest.New(t, llmtest.Status(503, "overloaded"), llmtest.Status(503, "overloaded"), llmtest.Status(503, "overloaded"))
	h := llmHost(t, srv, pluginRoot(t, "plugins/agents/react", "plugins/tools/math"))
	agent, err := h.Agents.Get(context.Background(), "react")
	if err != nil {
		t.Fatal(err)
	}
	_, err = agent.Run(execution.With(context.Background(), mustExec(t, h, "default")), json.RawMessage(`{"question":"1+1"}`))
	if err == nil || !strings.Contains(err.Error(), `llm "default"`) || !strings.Contains(err.Error(), "503") {
		t.Fatalf("LLM down: err = %v, want an error naming the LLM and the status", err)
	}
	if n := srv.Count(); n != 2 {
		t.Errorf("%d requests, want 1 + max_retries (1) = 2", n)
	}
}

func mustExec(t *testing.T, h *host.Host, llmName string) *execution.Execution {
	t.Helper()
	e, err := h.NewExecution(host.ExecutionOptions{RunID: "t", InstanceID: t.Name(), LLM: llmName})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// go-plugin's broker withdraws a connection offer not taken within 5 s:
// a plugin whose first host call comes later must still reach the host.
func TestHostServicesLongAfterLaunch(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("waits past go-plugin's 5 s broker timeout")
	}
	h := newHost(t, pluginRoot(t, "test/testplugins/hostuser", "plugins/tools/math"))
	if _, err := h.Tools.Get(context.Background(), "calc"); err != nil { // launches hostuser
		t.Fatal(err)
	}
	time.Sleep(6 * time.Second)
	_, ctx := newExec(t, h)
	if out, err := callIn(t, ctx, h, "calc", `{"expression":"2+2"}`); err != nil || string(out) != `{"value":4}` {
		t.Fatalf("first host call 6 s after launch = %s, %v", out, err)
	}
}
