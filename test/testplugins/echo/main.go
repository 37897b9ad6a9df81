// Command echo is a well-behaved test plugin: an echo tool, a tool that
// fails, one that panics, one that blocks until cancelled, one that counts
// its calls (so a test can prove a call never reached the plugin), one
// that logs inside its call, and a tiny task and agent, so every path
// through the host can be exercised.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync/atomic"

	"github.com/nexus-eval/nexus/sdk"
)

type Msg struct {
	Text string `json:"text" jsonschema:"text to echo back"`
}

type Empty struct{}

type Pid struct {
	Pid int `json:"pid"`
}

type Args struct {
	N int `json:"n,omitempty" jsonschema:"number of instances (default 3)"`
}

type Inst struct {
	Text      string `json:"text"`
	Reference Msg    `json:"reference"`
}

type Tag struct {
	Tag string `json:"tag" jsonschema:"any label"`
}

type Count struct {
	Count int64 `json:"count" jsonschema:"calls of counter in this process so far, this one included"`
}

// counterCalls is how many times the counter tool ran in this process.
var counterCalls atomic.Int64

type countTask struct{}

func (countTask) Instances(ctx context.Context, a Args, yield func(string, Inst) error) error {
	n := a.N
	if n == 0 {
		n = 3
	}
	if n < 0 {
		return sdk.Errorf("invalid_argument", "n must be positive, got %d", n)
	}
	for i := range n {
		text := fmt.Sprintf("item %d", i)
		if err := yield(fmt.Sprintf("echo-%d", i), Inst{Text: text, Reference: Msg{Text: text}}); err != nil {
			return err
		}
	}
	return nil
}

func (countTask) Evaluate(_ context.Context, _ Args, inst Inst, out Msg) (sdk.Result, error) {
	ok := out.Text == inst.Reference.Text
	score := 0.0
	if ok {
		score = 1
	}
	return sdk.Result{Score: score, Passed: ok, Details: map[string]string{"want": inst.Reference.Text, "got": out.Text}}, nil
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "echo", Version: "0.1.0", Description: "Test plugin"},
		sdk.Tool("echo", "Echoes its input", func(_ context.Context, in Msg) (Msg, error) { return in, nil }),
		sdk.Tool("fail", "Always fails with a domain error", func(_ context.Context, in Msg) (Msg, error) {
			return Msg{}, sdk.Errorf("invalid_input", "fail was asked to fail: %s", in.Text)
		}),
		sdk.Tool("panic", "Panics", func(context.Context, Msg) (Msg, error) { panic("boom") }),
		sdk.Tool("block", "Blocks until its call is cancelled", func(ctx context.Context, _ Empty) (Empty, error) {
			<-ctx.Done()
			return Empty{}, ctx.Err()
		}),
		sdk.Tool("pid", "Returns the plugin's process id", func(context.Context, Empty) (Pid, error) {
			return Pid{Pid: os.Getpid()}, nil
		}),
		sdk.Tool("spawn", "Starts a long sleep as a child and returns its process id", func(context.Context, Empty) (Pid, error) {
			cmd := exec.Command("sleep", "1000")
			if err := cmd.Start(); err != nil {
				return Pid{}, err
			}
			go cmd.Wait()
			return Pid{Pid: cmd.Process.Pid}, nil
		}),
		sdk.Tool("counter", "Counts how many times it ran in this process", func(context.Context, Tag) (Count, error) {
			return Count{Count: counterCalls.Add(1)}, nil
		}),
		sdk.Tool("log", "Logs its text inside the call, then echoes it", func(ctx context.Context, in Msg) (Msg, error) {
			sdk.Log(ctx).Info("echo log tool called", "text", in.Text)
			return in, nil
		}),
		sdk.Task("count", "Asks an agent to repeat a few strings", sdk.TaskHandler[Args, Inst, Msg](countTask{})),
		sdk.Agent("parrot", "Answers with the instance's text", func(_ context.Context, in Inst) (Msg, error) {
			return Msg{Text: in.Text}, nil
		}),
	)
}
