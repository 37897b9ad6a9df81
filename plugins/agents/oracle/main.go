// Command oracle is a Nexus agent plugin serving the agent oracle, a
// baseline and a self-test: run against a task whose instances carry their
// reference answer, it should score 100%.
//
// When the instance's reference is a set of files ({"reference": {"files":
// {path: content}}}, as the exercises task gives), the oracle works like
// any coding agent would, through the shell runtime tools: it writes the
// instance's "files" (stub, tests, go.mod) into the work dir, overwrites
// the solution files with the reference, and answers {"files": [paths
// written]}. Otherwise it answers with the instance's "reference" verbatim.
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

// shellWrite writes through the host's shell/write_file tool.
func shellWrite(ctx context.Context, path, content string) error {
	host, err := sdk.HostFrom(ctx)
	if err != nil {
		return err
	}
	_, err = host.CallTool(ctx, "shell/write_file", map[string]string{"path": path, "content": content}, nil)
	return err
}

// answer answers inst, writing files with shellWrite when it must.
func answer(ctx context.Context, inst map[string]any) (any, error) {
	return solve(ctx, inst, shellWrite)
}

func solve(ctx context.Context, inst map[string]any, write writeFunc) (any, error) {
	ref, ok := inst["reference"]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeInvalidInput, "instance has no \"reference\" field: the oracle agent only works on tasks whose instances carry their reference answer")
	}
	refFiles, ok := filesOf(ref)
	if !ok {
		return ref, nil
	}
	files, _ := filesOf(inst)
	written := []string{}
	for _, set := range []map[string]string{files, refFiles} {
		for _, p := range sortedKeys(set) {
			if err := write(ctx, p, set[p]); err != nil {
				return nil, fmt.Errorf("write %s: %w", p, err)
			}
			if !slices.Contains(written, p) {
				written = append(written, p)
			}
		}
	}
	slices.Sort(written)
	return map[string]any{"files": written}, nil
}

// filesOf returns v's "files" when v is an object whose "files" maps
// paths to string contents.
func filesOf(v any) (map[string]string, bool) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	raw, ok := obj["files"].(map[string]any)
	if !ok {
		return nil, false
	}
	files := make(map[string]string, len(raw))
	for p, c := range raw {
		s, ok := c.(string)
		if !ok {
			return nil, false
		}
		files[p] = s
	}
	return files, true
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "oracle", Version: "0.2.0", Description: "A baseline agent that answers with each instance's reference answer",
		Grants: manifest.Grants{Tools: []string{"shell/*"}}},
		sdk.Agent("oracle", "Answers with the instance's \"reference\" field verbatim or, when the reference is a set of files, writes the instance's files and then the reference files into the work dir", answer, sdk.WithTags("baseline")),
	)
}
