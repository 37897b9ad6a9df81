// Command slow is a test plugin for timeouts and cancellation: stall never
// answers and ignores its context; wait blocks until its context ends and
// then records when it saw that, in the file its input names (plugins run
// with a minimal environment, so the path travels in the input); sleep
// answers after a delay.
package main

import (
	"context"
	"os"
	"strconv"
	"time"

	"github.com/nexus-eval/nexus/sdk"
)

type Empty struct{}

type Wait struct {
	Path string `json:"path" jsonschema:"file to write the cancellation time to (Unix nanoseconds)"`
}

type Sleep struct {
	Ms int `json:"ms" jsonschema:"milliseconds to sleep"`
}

func main() {
	sdk.Serve(sdk.Plugin{Name: "slow", Version: "0.1.0", Description: "Never answers, or answers late"},
		sdk.Tool("stall", "Never answers, whatever happens to its context", func(context.Context, Empty) (Empty, error) {
			select {}
		}),
		sdk.Tool("wait", "Blocks until its context ends, then writes the time it saw that to path", func(ctx context.Context, in Wait) (Empty, error) {
			<-ctx.Done()
			seen := time.Now().UnixNano()
			if err := os.WriteFile(in.Path, []byte(strconv.FormatInt(seen, 10)), 0o644); err != nil {
				return Empty{}, sdk.Errorf("write", "%v", err)
			}
			return Empty{}, ctx.Err()
		}),
		sdk.Tool("sleep", "Answers after ms milliseconds", func(ctx context.Context, in Sleep) (Sleep, error) {
			select {
			case <-time.After(time.Duration(in.Ms) * time.Millisecond):
				return in, nil
			case <-ctx.Done():
				return Sleep{}, ctx.Err()
			}
		}),
	)
}
