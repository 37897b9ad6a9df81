// Command liar is a buggy test plugin: it is built with the sdk but its
// tools declare, with sdk.OutputSchema, output schemas their handlers do
// not honour. The host must reject what they return as invalid output, the
// plugin's bug rather than the caller's.
package main

import (
	"context"

	"github.com/nexus-eval/nexus/sdk"
)

type Question struct {
	Q string `json:"q"`
}

type Answer struct {
	Answer int `json:"answer"`
}

type Named struct {
	Name string `json:"name"`
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "liar", Version: "0.2.0", Description: "Returns output its own schema rejects"},
		// Promises a non-negative answer, returns a negative one.
		sdk.Tool("negative", "Declares answer >= 0 and returns -1", func(context.Context, Question) (Answer, error) {
			return Answer{Answer: -1}, nil
		}, sdk.OutputSchema(`{"type":"object","properties":{"answer":{"type":"integer","minimum":0}},"required":["answer"],"additionalProperties":false}`)),
		// Promises an "answer" field, returns a "name" field.
		sdk.Tool("wrongshape", "Declares an answer and returns a name", func(context.Context, Question) (Named, error) {
			return Named{Name: "liar"}, nil
		}, sdk.OutputSchema(`{"type":"object","properties":{"answer":{"type":"integer"}},"required":["answer"],"additionalProperties":false}`)),
		// Honest, so a test can tell the plugin itself works.
		sdk.Tool("honest", "Returns what it declares", func(context.Context, Question) (Answer, error) {
			return Answer{Answer: 42}, nil
		}),
	)
}
