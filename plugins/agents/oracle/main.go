// Command oracle is a Nexus agent plugin serving the agent oracle, which
// answers every instance with the instance's own "reference" field. It is a
// baseline and a self-test: run against a task whose instances carry their
// reference answer, it should score 100%.
package main

import (
	"context"

	"github.com/nexus-eval/nexus/sdk"
)

// answer returns the instance's reference answer as it is.
func answer(_ context.Context, inst map[string]any) (any, error) {
	ref, ok := inst["reference"]
	if !ok {
		return nil, sdk.Errorf(sdk.CodeInvalidInput, "instance has no \"reference\" field: the oracle agent only works on tasks whose instances carry their reference answer")
	}
	return ref, nil
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "oracle", Version: "0.1.0", Description: "A baseline agent that answers with each instance's reference answer"},
		sdk.Agent("oracle", "Answers with the instance's \"reference\" field verbatim", answer, sdk.WithTags("baseline")),
	)
}
