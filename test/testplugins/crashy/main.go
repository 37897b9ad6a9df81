// Command crashy is a test plugin for evaluation runs: a task "seq" whose
// instances carry their own id, and an agent "crashy" that answers with
// the reference but misbehaves on chosen instances. Behaviour comes from
// the environment (the host's PluginEnv), so it can change between runs
// without changing the task arguments (which are part of a run's
// idempotency key):
//
//	CRASHY_LOG       append the id of every instance the agent runs to this file
//	CRASHY_CRASH     the agent exits with status 3 on this instance id
//	CRASHY_BLOCK     the agent blocks on this instance id until its call is cancelled
//	CRASHY_BAD       the task yields this instance id as malformed (a "task_error" field)
//	CRASHY_REVISION  the dataset revision every instance reports (default "r1")
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/nexus-eval/nexus/sdk"
)

type Args struct {
	N int `json:"n,omitempty" jsonschema:"number of instances (default 5)"`
}

type Ref struct {
	Answer int `json:"answer"`
}

type Inst struct {
	ID              string `json:"id"`
	DatasetRevision string `json:"dataset_revision"`
	Reference       Ref    `json:"reference"`
	TaskError       string `json:"task_error,omitempty"`
}

type seq struct{}

func (seq) Instances(ctx context.Context, a Args, yield func(string, Inst) error) error {
	n := a.N
	if n == 0 {
		n = 5
	}
	if n < 0 {
		return sdk.Errorf("invalid_argument", "n must be positive, got %d", n)
	}
	rev := os.Getenv("CRASHY_REVISION")
	if rev == "" {
		rev = "r1"
	}
	for i := 1; i <= n; i++ {
		id := fmt.Sprintf("s-%03d", i)
		inst := Inst{ID: id, DatasetRevision: rev, Reference: Ref{Answer: i}}
		if id == os.Getenv("CRASHY_BAD") {
			inst.TaskError = "malformed instance " + id + " (CRASHY_BAD)"
		}
		if err := yield(id, inst); err != nil {
			return err
		}
	}
	return nil
}

func (seq) Evaluate(_ context.Context, _ Args, inst Inst, out Ref) (sdk.Result, error) {
	if out.Answer == inst.Reference.Answer {
		return sdk.Result{Score: 1, Passed: true}, nil
	}
	return sdk.Result{Score: 0}, nil
}

func agent(ctx context.Context, in Inst) (Ref, error) {
	if path := os.Getenv("CRASHY_LOG"); path != "" {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return Ref{}, err
		}
		_, err = fmt.Fprintln(f, in.ID)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return Ref{}, err
		}
	}
	switch in.ID {
	case os.Getenv("CRASHY_CRASH"):
		fmt.Fprintf(os.Stderr, "crashy: exiting on instance %s\n", in.ID)
		os.Exit(3)
	case os.Getenv("CRASHY_BLOCK"):
		<-ctx.Done()
		return Ref{}, ctx.Err()
	}
	return in.Reference, nil
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "crashy", Version: "0.1.0", Description: "Test plugin: an agent that crashes or blocks on chosen instances"},
		sdk.Task("seq", "Numbered instances that carry their own id", sdk.TaskHandler[Args, Inst, Ref](seq{})),
		sdk.Agent("crashy", "Answers with the reference; crashes or blocks on the instances named in its environment", agent),
	)
}
