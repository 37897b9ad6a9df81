// Command nop is a Nexus agent plugin serving the agent nop, a baseline
// that solves nothing: it writes the instance's "files" (for the exercises
// task: the untouched stub, tests and go.mod) into the work dir through
// the shell runtime tools, changes nothing else and answers {}. Run
// against a task, it should score what the unmodified starting point
// scores. An instance without "files" gets {} and nothing is written.
package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/nexus-eval/nexus/manifest"
	"github.com/nexus-eval/nexus/sdk"
)

// writeFunc writes one file of the work dir.
type writeFunc func(ctx context.Context, path, content string) error

func shellWrite(ctx context.Context, path, content string) error {
	host, err := sdk.HostFrom(ctx)
	if err != nil {
		return err
	}
	_, err = host.CallTool(ctx, "shell/write_file", map[string]string{"path": path, "content": content}, nil)
	return err
}

func answer(ctx context.Context, inst map[string]any) (map[string]any, error) {
	return nothing(ctx, inst, shellWrite)
}

func nothing(ctx context.Context, inst map[string]any, write writeFunc) (map[string]any, error) {
	raw, _ := inst["files"].(map[string]any)
	paths := make([]string, 0, len(raw))
	for p := range raw {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		content, ok := raw[p].(string)
		if !ok {
			return nil, sdk.Errorf(sdk.CodeInvalidInput, "instance file %q is not a string: files must map paths to contents", p)
		}
		if err := write(ctx, p, content); err != nil {
			return nil, fmt.Errorf("write %s: %w", p, err)
		}
	}
	return map[string]any{}, nil
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "nop", Version: "0.1.0", Description: "A baseline agent that lays out the instance's files and solves nothing",
		Grants: manifest.Grants{Tools: []string{"shell/*"}}},
		sdk.Agent("nop", "Writes the instance's \"files\" into the work dir unchanged and answers {}", answer, sdk.WithTags("baseline")),
	)
}
